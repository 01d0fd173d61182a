-- Drives headless Neovim (>= 0.11) with the config documented in docs/editors.md:
--   nvim --headless --clean -l nvim_driver.lua CONFIG.lua FILE LINE CODE FIX_TITLE FIXED_LINE RESULT.json
-- CONFIG.lua is the documented snippet, run as is. Opens FILE, :write, waits for the diagnostic,
-- requests hover and code action, applies the fix, :write again, waits for the diagnostic to go.
-- Exit status 0 when every check passed; RESULT.json says what was seen.
local config, file, line, code, fix_title, fixed_line, result_path = unpack(arg)
line = tonumber(line)
local T0 = vim.uv.hrtime()
local result = { ok = false }

local function log(msg)
  io.stdout:write(string.format("[%.1f s] %s\n", (vim.uv.hrtime() - T0) / 1e9, msg))
  io.stdout:flush()
end

local function wait(what, ms, pred)
  local ok = vim.wait(ms, pred, 50)
  assert(ok, "timed out after " .. ms / 1000 .. " s waiting for " .. what)
  log("ok: " .. what)
end

local function ours(buf)
  return vim.tbl_filter(function(d)
    return d.source == "cutespin"
  end, vim.diagnostic.get(buf))
end

local function run()
  result.nvim = tostring(vim.version())
  assert(vim.fn.has("nvim-0.11") == 1, "Neovim >= 0.11 is needed, this is " .. result.nvim)
  -- Observe the server's status notification (not part of the documented config).
  local statuses = {}
  vim.lsp.handlers["cutespin/status"] = function(_, status)
    table.insert(statuses, status)
  end
  dofile(config) -- the documented configuration, exactly
  vim.cmd("filetype on")
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.bo[buf].filetype == "python", "filetype: " .. vim.bo[buf].filetype)

  local client
  wait("the cutespin client to attach and initialize", 30000, function()
    client = vim.lsp.get_clients({ bufnr = buf, name = "cutespin" })[1]
    return client ~= nil and client.initialized
  end)
  result.root_dir = client.root_dir

  vim.cmd("write") -- didSave: the check runs on save
  local diag
  wait("a " .. code .. " diagnostic on line " .. line .. " with its verified fix", 90000, function()
    for _, d in ipairs(ours(buf)) do
      local lsp = d.user_data and d.user_data.lsp or {}
      local data = lsp.data or {}
      if d.code == code and d.lnum == line - 1 and data.fixes and #data.fixes > 0 and not data.fixesPending then
        diag = d
        return true
      end
    end
    return false
  end)
  result.diagnostics = #ours(buf)
  result.message = diag.message
  result.severity = diag.severity
  result.related = #(diag.user_data.lsp.relatedInformation or {})

  -- Hover on the squiggle (what K shows).
  local pos = { line = diag.lnum, character = diag.col }
  local hover = client:request_sync("textDocument/hover", {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    position = pos,
  }, 20000, buf)
  assert(hover and hover.result, "no hover: " .. vim.inspect(hover and hover.err))
  local value = hover.result.contents.value
  result.hover = value
  assert(value:find("Interleaving found by SPIN", 1, true), "the hover has no interleaving:\n" .. value)
  assert(value:find(code, 1, true), "the hover does not name " .. code)
  log("ok: hover with the interleaving")

  -- Code action on the diagnostic (what gra shows), then apply the fix.
  local actions = client:request_sync("textDocument/codeAction", {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = diag.user_data.lsp.range,
    context = { diagnostics = { diag.user_data.lsp }, only = { "quickfix" } },
  }, 20000, buf)
  assert(actions and actions.result and #actions.result > 0, "no code action: " .. vim.inspect(actions))
  result.actions = vim.tbl_map(function(a)
    return a.title
  end, actions.result)
  local fix
  for _, a in ipairs(actions.result) do
    if a.title:find(fix_title, 1, true) then
      fix = a
    end
  end
  assert(fix, "no action titled " .. fix_title .. ": " .. vim.inspect(result.actions))
  assert(fix.kind == "quickfix" and fix.isPreferred, "kind/isPreferred: " .. vim.inspect(fix))
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  assert(text:find(fixed_line, 1, true), "the fixed line is not in the buffer: " .. fixed_line)
  log("ok: the fix is applied")

  local changed = vim.lsp.util.buf_versions[buf]
  vim.cmd("write")
  local final
  wait("the re-check of the fixed text to clear the diagnostic", 90000, function()
    for _, st in ipairs(statuses) do
      if st.state == "done" and st.version == changed then
        final = st
      end
    end
    return final ~= nil and #ours(buf) == 0
  end)
  result.status_after = final
  result.diagnostics_after = #ours(buf)
  result.ok = true
end

local ok, err = pcall(run)
if not ok then
  result.error = tostring(err)
  log("FAILED: " .. tostring(err))
end
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop()
end
vim.wait(3000, function()
  return #vim.lsp.get_clients() == 0
end, 50)
local f = assert(io.open(result_path, "w"))
f:write(vim.json.encode(result))
f:close()
log(result.ok and "PASS" or "FAIL")
os.exit(result.ok and 0 or 1)
