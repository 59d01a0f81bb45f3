"""What topic notebooks import while they run on a GPU: ``measure`` (ceilings and timing),
``paired`` (a baseline and a candidate timed back to back), ``power`` (clock and power under
load), ``roofline`` (points and their saved form), ``charts`` (Vega-Lite charts),
``cuda`` (compiling the ``.cu`` files beside a notebook) and ``notebook`` (headline figures and
saved data).

This file imports nothing: a notebook's frozen result depends on the code of the kit modules it
imports (:mod:`worklog_gen.freeze.source_hash`), and only those.
"""
