"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Modules, one job each:

    datasets    load a results file once: bytes, sha256, parsed model, validation report, summary
                (summaries are derived in memory by phase.analysis, never written to results/)
    tables      summary rows + findings -> results-table rows (formatted, linked, marked)
    findings    validation findings -> the findings list (rejected values struck through)
    charts      summary rows -> Altair/Vega-Lite specs, PNG fallbacks, the vendored Vega JS
    provenance  machine, software, models + sha256, date, commit, command of a results file
    changes     what changed between two versions of a note
    rawpages    one data page per results file (every run, anchored by run id)
    anchors     stable page names, anchors and relative links
    notes       note sources: front matter + Markdown with Jinja calls into templates/
    render      note versions -> docs/notes/<slug>/{index.md, vN/index.md}, the notes list
    site        orchestration: validate, render, mkdocs build --strict, serve
"""
