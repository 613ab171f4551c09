// The viewer's stylesheet, injected at start so the bundle stays one file.
export const CSS = `
html,body{margin:0;height:100%;font:13px Verdana,"DejaVu Sans",sans-serif;color:#222;background:#fff}
.kiln{display:flex;flex-direction:column;height:100vh}
header{padding:4px 8px;border-bottom:1px solid #ddd;background:#fafafa}
h1.title{font-size:16px;margin:2px 0;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.subtitle{color:#666;font-size:12px;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.toolbar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:4px}
.tabs{display:flex;gap:0}
.tabs button[aria-selected=true],button[aria-pressed=true]{background:#446;color:#fff}
button,select,input{font:inherit;font-size:12px}
button{border:1px solid #bbb;background:#fff;border-radius:3px;padding:2px 8px;cursor:pointer}
.search{width:220px}
.search.invalid{outline:2px solid #d33}
.matched{font-weight:bold;min-width:110px}
.transforms{padding:3px 8px;background:#fff7e0;border-bottom:1px solid #eed}
.transform{margin-right:4px}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin-top:4px;font-size:12px;align-items:center}
.swatch{display:inline-block;width:14px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #888}
.timeline{position:relative;height:56px;border-bottom:1px solid #ddd}
.timeline-canvas{width:100%;height:100%;display:block;cursor:crosshair}
.timeline-label{position:absolute;right:6px;top:2px;font-size:11px;background:rgba(255,255,255,.8);pointer-events:none}
.crumbs{padding:3px 8px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px}
.crumb{border:none;background:none;color:#225;padding:0 2px;max-width:300px;overflow:hidden;text-overflow:ellipsis;white-space:pre;vertical-align:bottom}
.panes{flex:1;min-height:0;position:relative}
.pane{position:absolute;inset:0;display:flex;flex-direction:column}
.pane[hidden]{display:none}
.flame{flex:1;min-height:0;position:relative;overflow:hidden}
.flame-canvas{display:block;outline:none}
.sandwich-title{padding:4px 8px;font-weight:bold;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.sandwich-label{padding:2px 8px;font-size:11px;color:#666;border-top:1px solid #eee}
.flame[hidden]{display:none}
.details{padding:3px 8px;border-top:1px solid #ddd;font-size:12px;white-space:pre;overflow:hidden;text-overflow:ellipsis;min-height:16px}
.tooltip{position:fixed;z-index:10;background:#ffffe8;border:1px solid #aa9;padding:4px 6px;font-size:12px;pointer-events:none;max-width:560px;box-shadow:0 1px 4px rgba(0,0,0,.2)}
.tt-name{font-weight:bold;white-space:pre-wrap;word-break:break-all}
.tooltip[hidden],.menu[hidden],.help[hidden],.transforms[hidden]{display:none}
.menu{position:fixed;z-index:11;background:#fff;border:1px solid #999;box-shadow:0 2px 8px rgba(0,0,0,.25);display:flex;flex-direction:column;min-width:260px}
.menu button{border:none;text-align:left;padding:4px 10px;border-radius:0}
.menu button:hover{background:#eef}
.menu-title{padding:4px 10px;font-weight:bold;white-space:pre;overflow:hidden;text-overflow:ellipsis;max-width:420px;border-bottom:1px solid #ddd}
.help{position:fixed;z-index:12;top:60px;left:50%;transform:translateX(-50%);background:#fff;border:1px solid #999;padding:8px 16px;box-shadow:0 2px 12px rgba(0,0,0,.3)}
kbd{border:1px solid #aaa;border-radius:3px;padding:0 4px;background:#f4f4f4}
.table{display:flex;flex-direction:column;height:100%}
.table-filter{margin:4px 8px;width:300px}
.table-head,.row{display:grid;grid-template-columns:110px 110px 110px 110px 1fr;gap:0}
.table-head{font-weight:bold;border-bottom:1px solid #ccc;cursor:pointer;user-select:none}
.table-head .sorted{color:#225}
.table-body{flex:1;overflow:auto;position:relative}
.table-rows{position:absolute;left:0;right:0;top:0}
.row{position:absolute;left:0;right:0;height:20px;line-height:20px;cursor:pointer}
.row:nth-child(odd){background:#f6f6f6}
.row:hover{background:#eef}
.cell{padding:0 6px;white-space:pre;overflow:hidden;text-overflow:ellipsis}
.cell.num{text-align:right;font-variant-numeric:tabular-nums}
.error{padding:20px;color:#a00;white-space:pre-wrap}
`;
