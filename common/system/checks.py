"""One-line checks of config values, run before anything starts: each raises errors.ConfigError
naming the value and what is allowed."""
from common.system import errors
from common.system import field_types

__all__ = ('require', 'require_field_types', 'require_positive_ints', 'require_fractions')


def require(condition, message):
    """Raises ConfigError(message) unless condition holds; for validating gin values up front."""
    if not condition:
        raise errors.ConfigError(message)


def require_field_types(owner, config):
    """Raises ConfigError naming the first field of the config dataclass whose value is not of
    its annotated type (a string where a number belongs, ...); call before range checks."""
    message = field_types.first_type_error(owner, config)
    require(message is None, message)


def require_positive_ints(owner, config, names):
    """Checks that each named field of config is an int > 0 (bools excluded)."""
    for name in names:
        value = getattr(config, name)
        require(isinstance(value, int) and not isinstance(value, bool) and value > 0,
                f'{owner}.{name} must be a positive integer, got {value!r}')


def require_fractions(owner, config, names):
    """Checks that each named field of config is in [0, 1] (a probability: an epsilon)."""
    for name in names:
        value = getattr(config, name)
        require(0 <= value <= 1, f'{owner}.{name} must be in [0, 1], got {value}')
