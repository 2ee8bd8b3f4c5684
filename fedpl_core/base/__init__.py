"""The base layer: what every other layer may use and which knows no registry.

* :mod:`~fedpl_core.base.validation` - dataclass fields and keyword options checked against
  their annotations, :class:`~fedpl_core.base.validation.ConfigError`;
* :mod:`~fedpl_core.base.config_files` - YAML / JSON config files, read with bounds;
* :mod:`~fedpl_core.base.fileio`, :mod:`~fedpl_core.base.locks` - atomic writes (never through
  a link) and run locks;
* :mod:`~fedpl_core.base.paths` - where figures, tables and results go;
* :mod:`~fedpl_core.base.messages` - warnings as one line;
* :mod:`~fedpl_core.base.plugins` - the user's own modules of methods and data sources.
"""
