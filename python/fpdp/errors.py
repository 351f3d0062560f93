"""The exceptions of fpdp. Their messages are the command line's one-line messages (without its "fpdp: error: ")."""


class FpdpError(Exception):
    """Base class of fpdp's own exceptions. `exit_status` is what `fpdp` would have exited with (2 bad input, 1 a
    failure)."""

    exit_status = 1


class CaseError(FpdpError, ValueError):
    """Bad input: a case, an override, an output directory or a checkpoint fpdp refuses (the command line's exit
    status 2). For a key of the case, `key`, `value` (as TOML) and `allowed` say which, what was given and what would
    have been accepted; they are empty where the message is about something else (a TOML syntax error, an unreadable
    file)."""

    exit_status = 2
    key = ""
    value = ""
    allowed = ""


class RunError(FpdpError, RuntimeError):
    """A run that failed (the command line's exit status 1): a numerical fault, a solver failure, a full disk."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or the progress callback) stopped a run. Nothing computed is lost: the run's directory DIR.partial
    keeps its files and its last checkpoint, and `fpdp.resume(output_directory)` (or `fpdp run --restart DIR`)
    continues from it; the message says whether a checkpoint exists. A KeyboardInterrupt, so that code which
    catches Ctrl-C catches it."""

    output_directory = ""
