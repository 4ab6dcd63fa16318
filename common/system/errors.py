"""The two ways a run ends in one line (a bad config before anything starts, or a run that
cannot go on), and the one-line causes of file errors; app.execute turns each into its exit."""
import re


class ConfigError(ValueError):
    """A configuration value that is out of range; the message names the value and the range."""


class RunError(RuntimeError):
    """A run cannot go on (a worker died, no checkpoint can be read); the message says why and
    what was saved, in one line."""


_stop_signalled = False


def note_stop_signal(signalled=True):
    """Record that Ctrl-C or SIGTERM asked the run to stop (app's handler); False clears it."""
    global _stop_signalled  # pylint: disable=global-statement
    _stop_signalled = signalled


def is_interrupt(error):
    """Whether error is Ctrl-C's KeyboardInterrupt, or an error it caused. Raised inside a C
    extension's callback (TensorFlow converting a numpy array, say), the interrupt surfaces as
    a SystemError caused by it, which TensorFlow may wrap again in a TypeError raised `from None`
    (the chain is cut): so once a stop was signalled, any error is the interrupt's."""
    if _stop_signalled:
        return True
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def describe_os_error(error):
    """One line for a failed file operation: what it did not manage, on which path, and why;
    nothing already written was removed."""
    path = error.filename or '?'
    cause = error.strerror or str(error)
    return f'cannot write or read {path}: {cause}; what the run wrote before is kept'


def describe_tf_error(error):
    """'path; cause' of a TensorFlow file error without its op decorations: TF reports a full
    disk as '{{function_node ...}} PATH; No space left on device [Op:SaveV2]'."""
    text = str(getattr(error, 'message', None) or error).strip().splitlines()
    text = re.sub(r'^\{\{[^}]*\}\}\s*', '', text[0] if text else type(error).__name__)
    return re.sub(r'\s*\[Op:[^\]]*\]$', '', text)
