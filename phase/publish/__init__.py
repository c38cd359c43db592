"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Modules, one job each:

    datasets   load a results file once: bytes, sha256, parsed model, validation report, summary
    summary    raw runs -> per-condition summary rows (what every table and chart reads)
    tables     summary rows + findings -> display rows (formatted numbers, links, marks)
    charts     summary rows -> Altair/Vega-Lite specs, PNG fallbacks, the vendored Vega bundle
    rawpages   one data page per results file (every run, anchored by run id)
    notes      note sources: front matter + Markdown with Jinja calls into templates/
    render     note versions -> docs/notes/<slug>/{index.md, vN/index.md}, home list
    site       orchestration: validate, render, mkdocs build --strict, serve
"""
