// The cutespin VS Code extension: starts `cutespin serve` and shows what it reports.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { Launch, StatusBook, StatusPayload, commandArgs, launchFor, serverSettings, statusView } from "./config";

const SECTION = "cutespin";
const STATUS_NOTIFICATION = "cutespin/status";
const SERVER_COMMANDS = ["cutespin.showPromela", "cutespin.showTrace", "cutespin.recheck"];
const RESTART_KEYS = ["interpreter", "serverSource", "serverArgs"];

let client: LanguageClient | undefined;
let log: vscode.LogOutputChannel;
let statusItem: vscode.StatusBarItem;
const statuses = new StatusBook();
const virtualDocs = new Map<string, string>();
let starting: Promise<void> | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  log = vscode.window.createOutputChannel("cutespin", { log: true });
  statusItem = vscode.window.createStatusBarItem("cutespin.status", vscode.StatusBarAlignment.Left, 10);
  statusItem.name = "cutespin";
  context.subscriptions.push(log, statusItem);

  const provider: vscode.TextDocumentContentProvider = {
    provideTextDocumentContent: (uri) => virtualDocs.get(uri.toString()) ?? "",
  };
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider("cutespin-promela", provider),
    vscode.workspace.registerTextDocumentContentProvider("cutespin-trace", provider),
    vscode.commands.registerCommand("cutespin.restart", () => restart(context)),
    vscode.commands.registerCommand("cutespin.showLog", () => log.show(true)),
    vscode.window.onDidChangeActiveTextEditor(() => refreshStatus()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(`${SECTION}.${k}`))) {
        log.info("interpreter or server settings changed: restarting the server");
        void restart(context);
      }
    }),
    { dispose: () => void stop() },
  );
  await watchPythonExtension(context);
  await start(context);
}

export async function deactivate(): Promise<void> {
  await stop();
}

// ------------------------------------------------------------------------------------ server

async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const active = envs.getActiveEnvironmentPath(resource);
      const resolved = await envs.resolveEnvironment(active);
      const exe = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (exe) {
        return exe;
      }
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    return details?.execCommand?.[0];
  } catch (e) {
    log.warn(`could not ask the Python extension for its interpreter: ${e}`);
    return undefined;
  }
}

async function watchPythonExtension(context: vscode.ExtensionContext): Promise<void> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return;
  }
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const event = api?.environments?.onDidChangeActiveEnvironmentPath;
    if (event) {
      context.subscriptions.push(
        event(() => {
          if (!vscode.workspace.getConfiguration(SECTION).get<string>("interpreter")) {
            log.info("the Python extension's interpreter changed: restarting the server");
            void restart(context);
          }
        }),
      );
    }
  } catch {
    // no events from the Python extension: the user restarts by hand
  }
}

async function computeLaunch(context: vscode.ExtensionContext): Promise<Launch> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const cfg = vscode.workspace.getConfiguration(SECTION, folder);
  const interpreter = cfg.get<string>("interpreter") ?? "";
  const bundledDir = path.join(context.extensionPath, "bundled");
  const hasBundled = fs.existsSync(path.join(bundledDir, "cutespin", "__init__.py"));
  return launchFor({
    interpreter,
    pythonExtensionInterpreter: interpreter ? undefined : await pythonExtensionInterpreter(folder),
    serverSource: cfg.get("serverSource") ?? "auto",
    serverArgs: cfg.get<string[]>("serverArgs") ?? [],
    bundledDir: hasBundled ? bundledDir : undefined,
    env: process.env,
    pathSeparator: path.delimiter,
  });
}

function activeFindings(): { uri: string; line: number; findings: { id: string; line: number }[] } | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return undefined;
  }
  const uri = editor.document.uri;
  const findings = vscode.languages
    .getDiagnostics(uri)
    .filter((d) => d.source === "cutespin" && typeof (d as any).data?.id === "string")
    .map((d) => ({ id: (d as any).data.id as string, line: d.range.start.line }));
  return { uri: uri.toString(), line: editor.selection.active.line, findings };
}

async function showResult(command: string, result: any): Promise<void> {
  if (!result) {
    void vscode.window.showInformationMessage(`cutespin: nothing to show (is this file checked and does it hold a kernel?)`);
    return;
  }
  if (command === "cutespin.showPromela") {
    const uri = vscode.Uri.parse(`cutespin-promela:/${result.qualname ?? "model"}.pml`);
    virtualDocs.set(uri.toString(), result.text ?? "");
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
  } else if (command === "cutespin.showTrace") {
    const uri = vscode.Uri.parse(`cutespin-trace:/${encodeURIComponent(result.id ?? "trace")}.md`);
    virtualDocs.set(uri.toString(), result.markdown ?? "");
    try {
      await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
    } catch {
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    }
  } else if (command === "cutespin.recheck") {
    const verdicts = (result.results ?? []).map((r: any) => `${r.kernel}: ${r.verdict}`).join("; ");
    vscode.window.setStatusBarMessage(
      result.cancelled ? "cutespin: re-check cancelled" : `cutespin: re-checked: ${verdicts || "no kernels"}`,
      5000,
    );
  }
}

function clientOptions(): LanguageClientOptions {
  return {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    diagnosticCollectionName: "cutespin",
    outputChannel: log,
    traceOutputChannel: log,
    // The server's settings, for a server that cannot ask (it asks with workspace/configuration).
    initializationOptions: serverSettings(vscode.workspace.getConfiguration(SECTION)),
    // The hover's "show the full interleaving" link runs cutespin.showTrace.
    markdown: { isTrusted: { enabledCommands: SERVER_COMMANDS }, supportHtml: false },
    middleware: {
      workspace: {
        // Only the server's keys, without unset values (the server flags unknown keys).
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return result.map((value, i) => (params.items[i]?.section === SECTION ? serverSettings(value) : value));
        },
      },
      // The server's commands, whether run from a code lens, a hover link or the palette.
      executeCommand: async (command, args, next) => {
        const filled = commandArgs(command, args, activeFindings());
        if (!filled) {
          void vscode.window.showInformationMessage("cutespin: open a checked kernel file first");
          return undefined;
        }
        const result = await next(command, filled);
        if (SERVER_COMMANDS.includes(command)) {
          await showResult(command, result);
        }
        return result;
      },
    },
  };
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  if (starting) {
    return starting;
  }
  starting = (async () => {
    let launch: Launch;
    try {
      launch = await computeLaunch(context);
    } catch (e) {
      log.error(String(e));
      void vscode.window.showErrorMessage(String(e));
      return;
    }
    log.info(
      `starting: ${launch.command} ${launch.args.join(" ")} (interpreter from ${launch.interpreterFrom}, ` +
        `server code from the ${launch.source})`,
    );
    const serverOptions: ServerOptions = {
      // No `transport`: stdio is the default, and an explicit one would append `--stdio`.
      command: launch.command,
      args: launch.args,
      options: { env: launch.env },
    };
    const c = new LanguageClient("cutespin", "cutespin", serverOptions, clientOptions());
    c.onNotification(STATUS_NOTIFICATION, (s: StatusPayload) => {
      if (statuses.update(s)) {
        refreshStatus();
      }
    });
    c.onDidChangeState((e) => {
      if (e.newState === State.Stopped) {
        statuses.clear();
        refreshStatus();
      }
    });
    client = c;
    try {
      await c.start();
      log.info("server started");
    } catch (e) {
      log.error(`the server did not start: ${e}`);
      void vscode.window
        .showErrorMessage(
          `cutespin: the language server did not start with ${launch.command} (${e}). ` +
            "Set cutespin.interpreter to a Python with cutespin installed.",
          "Show log",
        )
        .then((pick) => pick && log.show(true));
    }
  })();
  try {
    await starting;
  } finally {
    starting = undefined;
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  statuses.clear();
  if (c) {
    try {
      await c.stop(5000);
    } catch (e) {
      log.warn(`stopping the server: ${e}`);
    }
    await c.dispose().catch(() => undefined);
  }
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  log.info("restarting the server");
  await stop();
  refreshStatus();
  await start(context);
}

// ------------------------------------------------------------------------------------ status

function refreshStatus(): void {
  const editor = vscode.window.activeTextEditor;
  const view = editor ? statusView(statuses.get(editor.document.uri.toString())) : undefined;
  if (!view) {
    statusItem.hide();
    return;
  }
  statusItem.text = view.text;
  statusItem.tooltip = view.tooltip;
  statusItem.backgroundColor =
    view.level === "error"
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
      : view.level === "warning"
        ? new vscode.ThemeColor("statusBarItem.warningBackground")
        : undefined;
  statusItem.command = view.level === "error" || view.level === "warning" ? "workbench.actions.view.problems" : "cutespin.showLog";
  statusItem.show();
}
