"""One rule for the package's adjustable limits: a module setting wins over
an environment variable (read at each use, so the commands obey it), which
wins over the default.  A setting must be a count > 0."""
import os


def positive(value, what, unit="count"):
    """`value` (an int, or a string such as "4096" or "0x1000") as an int > 0,
    else ValueError naming `what`."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a {unit} > 0, got {value!r}")
    try:
        n = int(str(value).strip(), 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a {unit} > 0, got {value!r}") from None
    if n <= 0:
        raise ValueError(f"{what}: expected a {unit} > 0, got {value!r}")
    return n


def limit(setting, setting_name, env, default, unit="count"):
    """The limit in force: `setting` (None: not set), else $`env`, else `default`."""
    if setting is not None:
        return positive(setting, setting_name, unit)
    text = os.environ.get(env)
    if text is not None and text.strip():
        return positive(text, env, unit)
    return default
