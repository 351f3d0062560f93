// Entry point of test_models: the suites live in test_losses.cpp, test_dataset.cpp and test_gaussian.cpp.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE models
#include <boost/test/unit_test.hpp>
