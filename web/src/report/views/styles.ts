// The report's stylesheet (the viewer injects its own; these classes are prefixed `r-`
// so the two never meet). Colours are the viewer's variables, light and dark.
export const REPORT_STYLES = `
/* Over the viewer's full-page layout: the report scrolls. */
:root:root,:root body{height:auto}
body{background:var(--bg)}
.r-page{max-width:1500px;margin:0 auto;padding:8px 16px 40px;min-width:0}
.r-page>*{min-width:0}
.r-head h1{font-size:19px;margin:6px 0 2px;white-space:pre-wrap;overflow-wrap:anywhere}
.r-status{display:inline-block;font-size:12px;padding:1px 8px;border-radius:9px;margin-left:8px;vertical-align:middle;border:1px solid var(--line)}
.r-status.complete{background:#e3f4e3;color:#1b5e20;border-color:#a5d6a7}
.r-status.incomplete{background:#fdecea;color:#8a1c1c;border-color:#e6a1a1}
@media (prefers-color-scheme: dark){.r-status.complete{background:#173a1c;color:#a5d6a7;border-color:#2e6b35}.r-status.incomplete{background:#4a1f1f;color:#ffb4b4;border-color:#7a3a3a}}
.r-note-text{margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere;max-height:12em;overflow:auto}
.r-head h1 bdi{overflow-wrap:anywhere}
.r-tags{display:flex;flex-wrap:wrap;gap:4px;margin:4px 0}
.r-tag{font-size:12px;border:1px solid var(--line);border-radius:3px;padding:0 5px;background:var(--panel);white-space:pre-wrap;overflow-wrap:anywhere;unicode-bidi:isolate}
.r-facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:12px;margin:8px 0}
.r-facts dt{color:var(--muted)}
.r-facts dd{margin:0;min-width:0;white-space:pre-wrap;word-break:break-all;max-height:4.5em;overflow:auto;unicode-bidi:isolate}
.r-figures{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.r-beam{white-space:pre-line;margin:4px 0 10px;font-size:13px}
.r-figure{border:1px solid var(--line);border-radius:4px;padding:6px 10px;min-width:130px;background:var(--panel)}
.r-figure-label{font-size:11px;color:var(--muted);white-space:pre-wrap}
.r-figure-value{font-size:17px;font-weight:bold;white-space:nowrap}
.r-figure-detail{font-size:11px;color:var(--muted)}
.r-figure-whole{font-size:11px;color:var(--muted);font-style:italic}
.r-figure-whole:empty{display:none}
.r-figures-head{font-size:13px;margin:10px 0 0;color:var(--muted);font-weight:normal}
.r-toc{display:flex;flex-wrap:wrap;gap:2px 10px;align-items:baseline;font-size:12px;margin:6px 0}
.r-toc-head{color:var(--muted)}
.r-toc-list{display:flex;flex-wrap:wrap;gap:2px 12px;list-style:none;margin:0;padding:0;min-width:0}
.r-toc-list li{min-width:0;max-width:40ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.r-toc a{color:var(--link)}
.r-scroll{overflow-x:auto;max-width:100%}
.r-section h2[tabindex],.r-profile h3[tabindex]{outline-offset:2px}
.r-warnings{margin:8px 0;padding:6px 10px 6px 26px;background:var(--warn-bg);border:1px solid var(--warn-line);border-radius:4px}
.r-warnings li{margin:2px 0;white-space:pre-wrap;word-break:break-word}
.r-windowbar{position:sticky;top:0;z-index:5;display:flex;flex-wrap:wrap;gap:6px;align-items:center;padding:6px 8px;margin:8px 0;background:var(--panel);border:1px solid var(--line);border-radius:4px}
.r-window-text{font-weight:bold;min-width:260px}
.r-window-help{color:var(--muted);font-size:12px}
.r-section{margin:18px 0}
.r-section>h2{font-size:15px;margin:0 0 6px;border-bottom:1px solid var(--line);padding-bottom:3px}
.r-chart{margin:10px 0 4px}
.r-chart-head{display:flex;gap:12px;align-items:baseline;flex-wrap:wrap}
.r-chart-title{font-size:13px;margin:0;font-weight:bold}
.r-caption{font-size:12px;color:var(--muted)}
.r-legend{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:2px 0 2px ${72}px;min-height:16px}
.r-item{white-space:nowrap}
button.r-item{font:inherit;color:inherit;background:none;border:1px solid transparent;border-radius:3px;padding:0 3px;cursor:pointer}
button.r-item:hover{border-color:#888}
.r-item.r-off{opacity:.5}
.r-item.r-off .r-label{text-decoration:line-through}
.r-swatch{display:inline-block;width:14px;height:4px;margin-right:4px;vertical-align:middle;background:var(--c)}
.r-swatch.dashed{background:repeating-linear-gradient(90deg,var(--c) 0 4px,transparent 4px 6px)}
.r-label{margin-right:4px}
.r-value{font-variant-numeric:tabular-nums;font-weight:bold}
.r-plot{position:relative;width:100%}
.r-plot canvas{position:absolute;left:0;top:0;display:block}
.r-overlay{cursor:crosshair}
.r-overlay:focus-visible,.r-xy-canvas:focus-visible{outline:2px solid var(--focus);outline-offset:1px}
.r-note{font-size:11px;color:var(--muted);margin-left:72px}
.r-marker-lane{position:absolute;left:0;height:18px;line-height:18px;font-size:11px;color:var(--muted);overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.r-marker{position:absolute;height:16px;margin:0;padding:0;text-indent:2px;box-sizing:border-box;border:1px solid var(--c);border-radius:2px;background:color-mix(in srgb,var(--c) 30%,var(--bg));color:var(--fg);font-size:11px;line-height:14px;text-align:left;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;cursor:pointer}
.r-marker:hover{background:color-mix(in srgb,var(--c) 50%,var(--bg))}
.r-marker[aria-pressed=true]{color:var(--fg);background:color-mix(in srgb,var(--c) 50%,var(--bg));outline:2px solid var(--focus);outline-offset:-1px;font-weight:bold}
.r-marker:focus-visible{outline:2px solid var(--focus);outline-offset:1px}
.r-marker-tip{position:absolute;z-index:6;max-width:90%;background:var(--panel);border:1px solid var(--line);border-radius:3px;padding:3px 6px;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;pointer-events:none}
.r-row{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
.r-profile{margin:14px 0}
.r-profile>h3{font-size:14px;margin:0 0 4px;overflow-wrap:anywhere}
.r-profile-window{font-size:12px;color:var(--muted);margin-bottom:4px}
.r-pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px;align-items:start}
.r-profile-col{min-width:0}
.r-profile-col-head{font-size:13px;margin:6px 0 0;color:var(--muted)}
.r-table{border-collapse:collapse;font-size:12px;margin:6px 0}
.r-marker-table{margin:4px 0 0 72px;font-size:12px}
.r-marker-table summary{cursor:pointer;color:var(--link)}
.r-marker-tools{display:flex;gap:10px;align-items:center;margin:4px 0}
.r-marker-table .r-table td:nth-child(2),.r-marker-table .r-table td:nth-child(6){text-align:left}
.r-trend-focus:focus{outline:none;stroke:var(--focus);stroke-width:2}
.r-trend-focus:focus-visible{outline:none}
.r-findings-list{margin:4px 0;padding-left:22px}
.r-finding{margin:6px 0}
.r-finding-claim{margin:0;white-space:pre-wrap;word-break:break-word}
.r-finding-explains{font-weight:bold}
.r-evidence-list{margin:2px 0;padding-left:18px;font-size:12px}
.r-evidence{white-space:pre-wrap;word-break:break-word}
.r-finding-check{margin:2px 0;font-size:12px;color:var(--muted)}
.r-finding-check code{color:var(--fg);white-space:pre-wrap;word-break:break-all}
.r-link{font:inherit;color:var(--link);background:none;border:none;padding:0;cursor:pointer;text-align:left}
.r-table th,.r-table td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:right;white-space:nowrap}
.r-table th:first-child,.r-table td:first-child{text-align:left;white-space:pre;max-width:520px;overflow:hidden;text-overflow:ellipsis}
.r-table thead th{border-bottom:2px solid var(--line);vertical-align:bottom}
.r-better{color:#1a7f37;font-weight:bold}
.r-worse{color:#c62828;font-weight:bold}
.r-same{color:var(--muted)}
.r-overall{font-size:1.05em;font-weight:bold;margin:6px 0 10px;word-break:break-word}
.r-role th{text-align:left;font-style:italic;color:var(--muted)}
.r-knee td{font-weight:bold}
.r-step{font:inherit;background:none;border:0;padding:0;color:inherit;text-decoration:underline dotted;cursor:pointer}
.r-knee-diff summary{cursor:pointer;margin:6px 0}
.r-grew{color:#c62828}
.r-shrank{color:#1f5fbf}
@media (prefers-color-scheme: dark){.r-better{color:#6fd08a}.r-worse{color:#ff8a80}.r-grew{color:#ff8a80}.r-shrank{color:#8fb8ff}}
.r-verdict{color:var(--muted);text-align:left!important;white-space:normal!important;min-width:180px}
.r-groups{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:10px}
.r-group{border:1px solid var(--line);border-radius:4px;padding:6px 10px;border-left:6px solid var(--c)}
.r-group h3{margin:2px 0;font-size:14px;white-space:pre-wrap;word-break:break-word}
.r-run{font-size:12px;margin:3px 0;white-space:pre-wrap;word-break:break-word}
`;
