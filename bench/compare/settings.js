// Node-RED settings for bench/compare/run.sh: no editor, no admin API, no projects, logs at
// warn; the HTTP nodes answer on 127.0.0.1:$NODE_RED_PORT. run.sh passes a throwaway
// --userDir and the flows file.
module.exports = {
    uiHost: "127.0.0.1",
    uiPort: parseInt(process.env.NODE_RED_PORT, 10),
    httpAdminRoot: false,
    httpNodeRoot: "/",
    disableEditor: true,
    flowFilePretty: false,
    credentialSecret: false,
    functionExternalModules: false,
    externalModules: { autoInstall: false, palette: { allowInstall: false } },
    diagnostics: { enabled: false, ui: false },
    runtimeState: { enabled: false, ui: false },
    telemetry: { enabled: false },
    logging: { console: { level: "warn", metrics: false, audit: false } },
    editorTheme: { projects: { enabled: false } },
};
