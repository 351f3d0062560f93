// Entry point of test_models: the suites live in the other test_*.cpp files of this folder.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE models
#include <boost/test/unit_test.hpp>
