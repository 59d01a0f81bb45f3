"""Reading the author's files: the log's text to typed entries.

:func:`load` (files and folders) and :func:`parse` (one text) return a :class:`Worklog`:
entries with their links, tasks and words, and the :class:`Diagnostic` of everything found
wrong or repaired. The rooms: ``model`` (the dataclasses), ``diagnostics`` (severities and
codes), ``shapes`` (the entry-header shapes), ``front_matter``, ``markdown_scan``, ``tasks``,
``words``, ``repair`` (damaged exports), ``shortcodes`` (Hugo), ``parse`` (the parse itself),
``lint`` (``worklog-gen check``), ``fix`` (``check --fix``) and ``authoring`` (``worklog-gen new``).
Nothing here knows of pages, MkDocs or notebooks.
"""

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode, Severity
from worklog_gen.log.model import DateOrder, Entry, EntryKind, Link, SourceFile, Task, TaskStatus, Worklog
from worklog_gen.log.parse import load, parse, worklog_files

__all__ = ["DateOrder", "Diagnostic", "DiagnosticCode", "Entry", "EntryKind", "Link", "Severity", "SourceFile",
           "Task", "TaskStatus", "Worklog", "load", "parse", "worklog_files"]
