"""Reading gin's operative config text: the bindings a run trained with, by name."""
import re

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
