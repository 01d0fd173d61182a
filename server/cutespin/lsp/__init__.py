"""The cutespin language server (`cutespin serve`): pygls handlers over pure helper modules.

- `server`: the pygls server and one thin handler per LSP method.
- `jobs`: one background check per document, cancellation, the per-document results.
- `convert`: kernel results and findings -> diagnostics, hovers, code actions, code lenses.
- `positions`: keeping result lines right while the text above them changes.
- `settings`: the editor's typed options and how they combine with `[tool.cutespin]`.
"""
