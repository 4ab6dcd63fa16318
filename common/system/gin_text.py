"""Reading gin text: the bindings a run trained with, by name, the includes of a gin file, and
bindings under names that have moved read as their names today."""
import ast
import contextlib
import dataclasses
import io
import os
import re

import gin

from common.system import errors

_BINDING = re.compile(r'^([A-Za-z_][\w.]*/?[\w.]*)\s*=\s*(.*)$')


def operative_bindings(text):
    """{'Configurable.param': value text} of an operative config (values over several lines
    joined)."""
    bindings, name = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            name = None
            continue
        found = _BINDING.match(line) if not line[0].isspace() else None
        if found:
            name = found.group(1)
            bindings[name] = found.group(2).strip()
        elif name is not None:
            bindings[name] += ' ' + line.strip()
    return bindings


def changed_bindings(before, after):
    """'name: old -> new' for each binding whose value differs between two operative config
    texts (a binding only one of them has shows 'absent' on the other side)."""
    old, new = operative_bindings(before), operative_bindings(after)
    return [f'{name}: {old.get(name, "absent")} -> {new.get(name, "absent")}'
            for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]


def _short_name(name):
    """'Configurable.param' of a binding name, its module path dropped; None if scoped."""
    if '/' in name:
        return None
    return '.'.join(name.split('.')[-2:])


def _plain(value):
    """A config value with its lists as tuples, so a gin list equals the tuple it builds."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item) for item in value)
    return value


def _recorded_value(text):
    try:
        return _plain(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text  # not a literal: compared as text with the current value's repr


def env_config_changes(recorded_text, env_config, gin_bindings):
    """'Class.field = old, now new' for each field of env_config (a dataclass) whose value
    differs from the one recorded in an operative config text and is not bound by name in
    gin_bindings (this command's --gin_bindings). A field the record lacks was added after the
    run began; its default is what it ran with (a new field's default keeps the old behaviour),
    unless the config's value_before(name, recorded fields) says otherwise. Fields the config's
    inert_fields() names (nothing they do can happen in its game) are not compared.
    """
    prefix = type(env_config).__name__
    recorded = {_short_name(name): value for name, value in operative_bindings(recorded_text)
                .items() if _short_name(name)}
    if not dataclasses.is_dataclass(env_config) or not any(
            name.startswith(prefix + '.') for name in recorded):
        return []  # nothing recorded to compare with
    lines = '\n'.join(line.strip() for binding in gin_bindings for line in binding.splitlines())
    bound = {_short_name(name) for name in operative_bindings(lines)}
    fields = {name.split('.', 1)[1]: _recorded_value(value) for name, value in recorded.items()
              if name.startswith(prefix + '.')}
    inert = set(env_config.inert_fields()) if hasattr(env_config, 'inert_fields') else set()
    value_before = getattr(env_config, 'value_before', lambda name, fields: dataclasses.MISSING)
    changes = []
    for field in dataclasses.fields(env_config):
        name, current = f'{prefix}.{field.name}', _plain(getattr(env_config, field.name))
        if name in bound or field.name in inert:
            continue
        before = dataclasses.MISSING if name in recorded else value_before(field.name, fields)
        if name in recorded:
            old, note = _recorded_value(recorded[name]), ''
        elif before is not dataclasses.MISSING:
            old, note = before, ' (absent from its config: what it did then)'
        elif field.default is not dataclasses.MISSING:
            old, note = _plain(field.default), ' (absent from its config: the default)'
        else:
            continue
        if old != current and not (isinstance(old, str) and old == repr(current)):
            changes.append(f'{name} = {old!r}{note}, now {current!r}')
    return changes


MAX_INCLUDE_DEPTH = 16
_INCLUDE = re.compile(r"""^\s*include\s+['"]([^'"]+)['"]""", re.MULTILINE)


def check_includes(path, project_root, chain=()):
    """ConfigError in one line, before gin parses anything, for a gin file that includes itself
    through others (gin would recurse until Python's limit) or includes deeper than
    MAX_INCLUDE_DEPTH; chain: the (name, real path) of the files that include path, outermost
    first. Includes resolve as gin finds them: as given, else under project_root. Returns
    [(name, text)] of path and every file it includes, in the order gin reads them."""
    chain = list(chain)
    resolved = path if os.path.isabs(path) or os.path.isfile(path) else os.path.join(
        project_root, path)
    key = os.path.realpath(resolved)
    names = [name for name, _ in chain]
    if key in [seen for _, seen in chain]:
        loop = names[[seen for _, seen in chain].index(key):] + [path]
        raise errors.ConfigError(f'gin include loop: {" includes ".join(loop)}')
    if len(chain) >= MAX_INCLUDE_DEPTH:
        raise errors.ConfigError(f'gin includes nest deeper than {MAX_INCLUDE_DEPTH} files: '
                                 f'{" includes ".join(names[:3])} ... {path}')
    try:
        with open(resolved) as f:
            text = f.read()
    except OSError:
        return []  # a missing include is gin's to name
    texts = []
    for included in _INCLUDE.findall(text):
        texts += check_includes(included, project_root, chain + [(path, key)])
    return texts + [(path, text)]


def binds(text, name):
    """Whether gin text binds name (at the start of a line, as gin reads it)."""
    return re.search(rf'(?m)^\s*{re.escape(name)}\s*=', text) is not None


def read_moved(text, moved):
    """text with each binding of an old name in moved ({old: new}) made a binding of new."""
    for old, new in moved.items():
        text = re.sub(rf'(?m)^(\s*){re.escape(old)}(\s*=)', rf'\g<1>{new}\g<2>', text)
    return text


@contextlib.contextmanager
def files_read_moved(moved):
    """While open, gin reads every config file (included ones too) through read_moved: a file
    that binds a moved name keeps working. gin's API only appends file readers; its list is
    replaced in place and put back. With nothing moved, gin reads as it always does."""
    if not moved:
        yield
        return
    readers = gin.config._FILE_READERS  # pylint: disable=protected-access
    saved = list(readers)

    def read(path):
        with open(path) as f:
            text = io.StringIO(read_moved(f.read(), moved))
        text.name = path  # what gin's errors name
        return text

    readers[:] = [(read, os.path.isfile)] + [pair for pair in saved if pair[0] is not open]
    try:
        yield
    finally:
        readers[:] = saved
