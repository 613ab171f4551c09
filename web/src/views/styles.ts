// The viewer's stylesheet, injected at start so the bundle stays one file. Colours are
// variables with a dark set for prefers-color-scheme: dark (render/theme.ts has the
// canvases' matching colours). Text colours meet WCAG AA contrast on their backgrounds.
export const STYLES = `
:root{--bg:#fff;--fg:#222;--muted:#595959;--line:#ddd;--panel:#fafafa;--button:#fff;--button-line:#999;--accent:#3a3a6a;--accent-fg:#fff;
--link:#223366;--hover:#eef;--stripe:#f6f6f6;--active:#dde6ff;--tip:#ffffe8;--tip-line:#aa9;--warn-bg:#fff7e0;--warn-line:#eed;--focus:#1a4fd0;--error:#a00;--kbd:#f4f4f4}
@media (prefers-color-scheme: dark){:root{--bg:#17181c;--fg:#e4e4e8;--muted:#b0b0ba;--line:#3a3c44;--panel:#1f2026;--button:#2a2c33;--button-line:#60636e;--accent:#8fa8ff;--accent-fg:#10121a;
--link:#a9c1ff;--hover:#2c3142;--stripe:#1d1e23;--active:#2b3a66;--tip:#2a2b22;--tip-line:#6b6a55;--warn-bg:#33301f;--warn-line:#5a5535;--focus:#7fb0ff;--error:#ff8a8a;--kbd:#2a2c33}}
html,body{margin:0;height:100%;font:13px Verdana,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
.kiln{display:flex;flex-direction:column;height:100vh}
.kiln-mount .kiln{box-sizing:border-box;height:var(--kiln-viewer-height,calc(100vh - 24px));min-height:240px;border:1px solid var(--line)}
.kiln-mount .kiln.kiln-full,.kiln.kiln-full{position:fixed;inset:0;z-index:30;height:100vh;border:none;background:var(--bg)}
html.kiln-has-full{overflow:hidden}
.kiln-resize{flex:0 0 auto;height:8px;cursor:ns-resize;border-top:1px solid var(--line);background:var(--panel);touch-action:none}
.kiln-resize:hover,.kiln-resize:focus-visible{background:var(--active)}
.kiln-full .kiln-resize{display:none}
.legend-toggle{font:inherit;color:inherit;background:none;border:1px solid transparent;border-radius:3px;padding:1px 4px;cursor:pointer}
.legend-toggle:hover{border-color:#888}
.category-items[hidden]{display:none}
.kiln-header{padding:4px 8px;border-bottom:1px solid var(--line);background:var(--panel);min-width:0}
.title{font-size:16px;margin:2px 0;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.subtitle{color:var(--muted);font-size:12px;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.facts{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:2px 0}
.fact-label{color:var(--muted)}
.fact{min-width:0;max-width:100%;overflow:hidden;text-overflow:ellipsis;white-space:pre}
.fact-value{white-space:pre}
.fact-side{font-weight:bold}
.toolbar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:4px}
.tabs{display:flex;gap:0}
.tabs button[aria-selected=true],button[aria-pressed=true]{background:var(--accent);color:var(--accent-fg);border-color:var(--accent)}
button,select,input{font:inherit;font-size:12px;color:var(--fg);background:var(--button)}
button{border:1px solid var(--button-line);border-radius:3px;padding:2px 8px;cursor:pointer}
select,input{border:1px solid var(--button-line);border-radius:3px}
:focus-visible{outline:2px solid var(--focus);outline-offset:1px}
.search-group{display:inline-flex;gap:4px;align-items:center}
.search{width:220px}
.search.invalid{outline:2px solid #d33}
.matched{font-weight:bold;min-width:110px}
.matched:empty{min-width:0}
.match-count{color:var(--muted);font-size:12px;white-space:nowrap}
.notice{padding:3px 8px;background:var(--warn-bg);border-bottom:1px solid var(--warn-line);font-size:12px}
.transforms{padding:3px 8px;background:var(--warn-bg);border-bottom:1px solid var(--warn-line)}
.transform{margin-right:4px}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin-top:4px;font-size:12px;align-items:center}
.swatch{display:inline-block;width:14px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #888}
.category-items{display:contents}
.category-legend[hidden]{display:none}
.category-item{font:inherit;color:inherit;background:none;border:1px solid transparent;border-radius:3px;padding:1px 4px;cursor:pointer}
.category-item:hover{border-color:#888}
.category-item[aria-pressed=true]{border-color:currentColor;font-weight:bold}
.category-share{margin-left:4px;opacity:.8}
.timeline{display:flex;flex-direction:column;border-bottom:1px solid var(--line)}
.timeline-label{font-size:11px;padding:1px 8px;color:var(--muted);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.timeline-bars{height:44px}
.timeline-canvas{width:100%;height:100%;display:block;cursor:crosshair}
.tracks{border-bottom:1px solid var(--line);flex:0 1 auto;overflow:hidden auto;max-height:25%;min-height:0}
.tracks[hidden]{display:none}
.tracks-title{font-size:11px;padding:1px 8px;color:var(--muted)}
.track{position:relative;height:22px;border-top:1px solid var(--line);cursor:pointer}
.track[aria-selected=true]{background:var(--active)}
.track:focus-visible{outline:2px solid var(--focus);outline-offset:-2px}
.track-canvas{position:absolute;inset:0;width:100%;height:100%;display:block}
.track-head{position:absolute;left:0;top:0;max-width:60%;display:flex;gap:2px;align-items:center;font-size:11px;line-height:14px;padding:0 4px;background:color-mix(in srgb,var(--bg) 80%,transparent);pointer-events:none}
.track-l2 .track-head{padding-left:18px}
.track-twisty{display:inline-block;width:12px;pointer-events:auto;cursor:pointer}
.track-label{white-space:pre;overflow:hidden;text-overflow:ellipsis}
.crumbs{padding:3px 8px;white-space:nowrap;overflow:hidden;font-size:12px;display:flex;align-items:center;min-width:0}
.crumbs[hidden]{display:none}
.crumb-item{display:inline-flex;align-items:center;min-width:0;flex:0 1 auto}
.crumb-item.current{flex:0 0 auto;max-width:60%}
.crumb-gap{flex:0 0 auto;color:var(--muted)}
.crumb{border:none;background:none;color:var(--link);padding:0 2px;max-width:300px;overflow:hidden;text-overflow:ellipsis;white-space:pre;min-width:2ch}
.crumb.current{font-weight:bold;max-width:100%}
.panes{flex:1;min-height:0;position:relative}
.pane{position:absolute;inset:0;display:flex;flex-direction:column}
.pane[hidden]{display:none}
.flame{flex:1;min-height:0;position:relative;overflow:hidden}
.flame-canvas{display:block}
.flame-canvas:focus-visible{outline:2px solid var(--focus);outline-offset:-2px}
.sandwich-title{padding:4px 8px;font-weight:bold;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.sandwich-label{padding:2px 8px;font-size:11px;color:var(--muted);border-top:1px solid var(--line)}
.flame[hidden]{display:none}
.details{padding:3px 8px;border-top:1px solid var(--line);font-size:12px;white-space:pre;overflow:hidden;text-overflow:ellipsis;min-height:16px}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
.tooltip{position:fixed;z-index:10;background:var(--tip);border:1px solid var(--tip-line);padding:4px 6px;font-size:12px;pointer-events:none;max-width:560px;box-shadow:0 1px 4px rgba(0,0,0,.2)}
.tt-name{font-weight:bold;white-space:pre-wrap;word-break:break-all}
.tooltip[hidden],.menu[hidden],.help[hidden],.transforms[hidden],.notice[hidden]{display:none}
.menu{position:fixed;z-index:11;background:var(--bg);border:1px solid var(--button-line);box-shadow:0 2px 8px rgba(0,0,0,.25);display:flex;flex-direction:column;min-width:260px}
.menu button{border:none;text-align:left;padding:4px 10px;border-radius:0;background:var(--bg)}
.menu button:hover,.menu button:focus{background:var(--hover)}
.menu-title{padding:4px 10px;font-weight:bold;white-space:pre;overflow:hidden;text-overflow:ellipsis;max-width:420px;border-bottom:1px solid var(--line)}
.help{position:fixed;z-index:12;top:40px;left:50%;transform:translateX(-50%);background:var(--bg);border:1px solid var(--button-line);padding:8px 16px;box-shadow:0 2px 12px rgba(0,0,0,.3);max-height:calc(100vh - 80px);overflow:auto;max-width:calc(100vw - 40px)}
.help th{text-align:left;white-space:nowrap;padding-right:12px;font-weight:normal;vertical-align:top}
.help td{padding:1px 0}
kbd{border:1px solid var(--button-line);border-radius:3px;padding:0 4px;background:var(--kbd);white-space:nowrap}
.table{display:flex;flex-direction:column;height:100%}
.table-filter{margin:4px 8px;width:300px}
.table-grid{display:flex;flex-direction:column;flex:1;min-height:0}
.table-head,.row{display:grid;gap:0}
.table-head{font-weight:bold;border-bottom:1px solid var(--line);user-select:none}
.table-head .cell{padding:0}
.table-head .cell.head-text{padding:2px 6px}
.table-head .sort{border:none;background:none;font-weight:bold;width:100%;text-align:inherit;padding:2px 6px;white-space:nowrap}
.table-head .num .sort{text-align:right}
.table-head .sorted .sort{color:var(--link)}
.table-body{flex:1;overflow:auto;position:relative}
.table-rows{position:absolute;left:0;right:0;top:0}
.row{position:absolute;left:0;right:0;height:20px;line-height:20px;cursor:pointer}
.row.odd{background:var(--stripe)}
.row:hover{background:var(--hover)}
.row.active{background:var(--active)}
.table-grid:focus-visible .row.active{outline:2px solid var(--focus);outline-offset:-2px}
.cell{padding:0 6px;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.cell.num{text-align:right;font-variant-numeric:tabular-nums}
.error{padding:20px;color:var(--error);white-space:pre-wrap}
.empty{position:absolute;left:0;right:0;top:0;z-index:2;margin:24px auto;max-width:640px;padding:10px 14px;background:var(--warn-bg);border:1px solid var(--warn-line);border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
.empty[hidden]{display:none}
.kiln-mount .kiln.no-samples{height:auto}
.kiln.no-samples .panes{min-height:90px}
.tree-caption{padding:3px 8px;font-size:12px;color:var(--muted)}
.tree .cell.fn{display:flex;align-items:center;min-width:0}
.twisty{display:inline-block;width:14px;flex:0 0 14px;text-align:center;cursor:pointer;color:var(--muted)}
.twisty.leaf{cursor:default}
.fn-name{overflow:hidden;text-overflow:ellipsis;white-space:pre;min-width:0}
.cell.fn.match .fn-name{font-weight:bold;text-decoration:underline}
.tree-grid:focus-visible .row.active{outline:2px solid var(--focus);outline-offset:-2px}
`;
