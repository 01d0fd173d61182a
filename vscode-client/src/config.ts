// The extension's pure logic, free of the `vscode` module so that node's test runner can test it:
// which settings go to the server, how the server is started, and what the status item says.

/** The keys of the `cutespin` section that the server reads (server/cutespin/lsp/settings.py). */
export const SERVER_KEYS = [
  "spin",
  "compiler",
  "loopBound",
  "depth",
  "timeout",
  "memoryMb",
  "strict",
  "verifyFixes",
  "trigger",
  "debounceMs",
  "severity",
  "extraPaths",
] as const;

/** Client-only keys of the same section; never sent to the server (it reports unknown keys). */
export const CLIENT_KEYS = ["interpreter", "serverSource", "serverArgs", "trace"] as const;

export type Settings = Record<string, unknown>;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The part of the `cutespin` section the server understands. Unset values (`null`, which is the
 * contributed default of every option whose default the server derives itself, or `undefined`)
 * are left out, so that the server's defaults and `[tool.cutespin]` of pyproject.toml apply.
 * Empty `severity` / `extraPaths` are left out too.
 */
export function serverSettings(section: unknown): Settings {
  const out: Settings = {};
  if (!isObject(section)) {
    return out;
  }
  for (const key of SERVER_KEYS) {
    const value = section[key];
    if (value === null || value === undefined) {
      continue;
    }
    if (key === "severity" && isObject(value) && Object.keys(value).length === 0) {
      continue;
    }
    if (key === "extraPaths" && Array.isArray(value) && value.length === 0) {
      continue;
    }
    out[key] = isObject(value) ? { ...value } : Array.isArray(value) ? [...value] : value;
  }
  return out;
}

export type ServerSource = "auto" | "environment" | "bundled";

export interface LaunchInput {
  /** `cutespin.interpreter`; empty when unset. */
  interpreter?: string;
  /** The Python extension's active interpreter, when that extension answered. */
  pythonExtensionInterpreter?: string;
  /** `cutespin.serverSource`. */
  serverSource?: ServerSource;
  /** `cutespin.serverArgs`. */
  serverArgs?: string[];
  /** Folder holding the Python sources packed in the .vsix (`<extension>/bundled`), if any. */
  bundledDir?: string;
  /** The environment to extend (process.env). */
  env?: Record<string, string | undefined>;
  /** Path separator for PYTHONPATH (`:` on POSIX, `;` on Windows). */
  pathSeparator?: string;
}

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  /** Where the server's code comes from, for the log. */
  source: "environment" | "bundled";
  /** Where the interpreter came from, for the log. */
  interpreterFrom: "setting" | "python extension" | "PATH";
}

/**
 * How to start the server: `<python> -m cutespin serve [serverArgs]`, with no transport flag
 * (the client talks stdio by default; an explicit transport would append `--stdio`).
 */
export function launchFor(input: LaunchInput): Launch {
  const setting = (input.interpreter ?? "").trim();
  const fromExt = (input.pythonExtensionInterpreter ?? "").trim();
  const command = setting || fromExt || "python3";
  const interpreterFrom = setting ? "setting" : fromExt ? "python extension" : "PATH";
  const env: Record<string, string | undefined> = { ...(input.env ?? {}) };
  const want = input.serverSource ?? "auto";
  if (want === "bundled" && !input.bundledDir) {
    throw new Error(
      "cutespin.serverSource is \"bundled\" but this extension carries no server sources " +
        "(build the .vsix with scripts/build-vsix --bundle-server, or use \"environment\")",
    );
  }
  const bundled = want === "bundled" || (want === "auto" && !!input.bundledDir);
  if (bundled && input.bundledDir) {
    const sep = input.pathSeparator ?? ":";
    const dir = input.bundledDir.replace(/[\\/]+$/, "");
    const parts = [`${dir}/libs`, dir];
    if (env.PYTHONPATH) {
      parts.push(env.PYTHONPATH);
    }
    env.PYTHONPATH = parts.join(sep);
  }
  env.PYTHONUNBUFFERED = "1";
  const args = ["-m", "cutespin", "serve", ...(input.serverArgs ?? [])];
  return { command, args, env, source: bundled ? "bundled" : "environment", interpreterFrom };
}

/** The payload of the server's `cutespin/status` notification (docs/lsp.md). */
export interface StatusPayload {
  uri: string;
  version?: number | null;
  state: "checking" | "checked" | "done" | "cancelled" | "error" | "idle" | "closed" | string;
  kernels?: number;
  findings?: number;
  inconclusive?: number;
  results?: { kernel: string; verdict: string; version?: number | null; findings?: string[] }[];
  seconds?: number;
  cached?: boolean;
  fixesPending?: number;
  message?: string;
  kind?: string;
  reason?: string;
}

export interface StatusView {
  /** Status bar text with a codicon, e.g. `$(error) cutespin: 1 finding`. */
  text: string;
  tooltip: string;
  /** Background hint for the status item. */
  level: "busy" | "ok" | "error" | "warning" | "info";
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** What the status item shows for a document's latest status; `undefined` hides it. */
export function statusView(s: StatusPayload | undefined): StatusView | undefined {
  if (!s || s.state === "idle" || s.state === "closed") {
    return undefined;
  }
  const kernels = s.kernels ?? 0;
  const findings = s.findings ?? 0;
  const inconclusive = s.inconclusive ?? 0;
  const lines = (s.results ?? []).map(
    (r) => `${r.kernel}: ${r.verdict}${r.findings && r.findings.length ? ` (${r.findings.join(", ")})` : ""}`,
  );
  const timing =
    typeof s.seconds === "number" ? `${s.cached ? "from cache" : `checked in ${s.seconds.toFixed(2)} s`}` : "";
  const tooltip = (extra: string[]) => ["cutespin", ...extra, ...lines, timing].filter(Boolean).join("\n");
  switch (s.state) {
    case "checking":
      return { text: "$(sync~spin) cutespin: checking", tooltip: tooltip(["Checking with SPIN…"]), level: "busy" };
    case "cancelled":
      return { text: "$(circle-slash) cutespin: cancelled", tooltip: tooltip(["The check was cancelled."]), level: "info" };
    case "error":
      return {
        text: "$(alert) cutespin: error",
        tooltip: tooltip([`${s.kind ? `${s.kind} error: ` : ""}${s.message ?? "the check failed"}`]),
        level: "error",
      };
  }
  // checked (fixes may still be pending) or done
  const pending = s.state === "checked" && (s.fixesPending ?? 0) > 0 ? " · verifying fixes" : "";
  if (findings > 0) {
    return { text: `$(error) cutespin: ${plural(findings, "finding")}${pending}`, tooltip: tooltip([]), level: "error" };
  }
  if (inconclusive > 0) {
    const of = kernels > 1 ? ` (${inconclusive} of ${kernels} kernels)` : "";
    return { text: `$(warning) cutespin: inconclusive${of}`, tooltip: tooltip([]), level: "warning" };
  }
  if (kernels === 0) {
    return { text: "$(check) cutespin: no kernels", tooltip: tooltip([]), level: "info" };
  }
  return { text: `$(check) cutespin: verified${kernels > 1 ? ` (${kernels} kernels)` : ""}`, tooltip: tooltip([]), level: "ok" };
}

/**
 * The latest status per document. A notification for an older document version than the one
 * already shown is ignored (a late message from a superseded check), except `closed`.
 */
export class StatusBook {
  private readonly byUri = new Map<string, StatusPayload>();

  update(s: StatusPayload): boolean {
    const prev = this.byUri.get(s.uri);
    if (s.state === "closed") {
      this.byUri.delete(s.uri);
      return true;
    }
    if (prev && typeof prev.version === "number" && typeof s.version === "number" && s.version < prev.version) {
      return false;
    }
    this.byUri.set(s.uri, s);
    return true;
  }

  get(uri: string): StatusPayload | undefined {
    return this.byUri.get(uri);
  }

  clear(): void {
    this.byUri.clear();
  }
}

/**
 * Arguments for a server command run without any (from the command palette): the active
 * document, and for showTrace the finding under the cursor or else the document's first one.
 */
export function commandArgs(
  command: string,
  args: unknown[],
  active: { uri: string; line: number; findings: { id: string; line: number }[] } | undefined,
): unknown[] | undefined {
  if (args.length > 0) {
    return args;
  }
  if (!active) {
    return undefined;
  }
  if (command === "cutespin.showTrace") {
    const here = active.findings.find((f) => f.line === active.line) ?? active.findings[0];
    return here ? [active.uri, here.id] : undefined;
  }
  return [active.uri];
}
