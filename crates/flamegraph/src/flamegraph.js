"use strict";
// kiln flame graph script. Every setting comes from attributes of <svg id="frames">;
// nothing in this file is generated, so no input can reach the code.
var SVGNS = "http://www.w3.org/2000/svg";
var frames, details, searchbtn, icbtn, unzoombtn, matchedtxt;
var cfg = {};
var zoomed = null, searchTerm = null, ignoreCase = false;

function attr(e, name) { return e.getAttribute(name); }
function num(e, name) { return parseFloat(e.getAttribute(name)); }

function init(evt) {
	frames = document.getElementById("frames");
	details = document.getElementById("details").firstChild;
	searchbtn = document.getElementById("search");
	icbtn = document.getElementById("ignorecase");
	unzoombtn = document.getElementById("unzoom");
	matchedtxt = document.getElementById("matched");
	cfg.total = num(frames, "fg:total");
	cfg.factor = num(frames, "fg:factor");
	cfg.fontsize = num(frames, "fg:fontsize");
	cfg.fontwidth = num(frames, "fg:fontwidth");
	cfg.inverted = attr(frames, "fg:inverted") == "1";
	cfg.searchcolor = attr(frames, "fg:searchcolor");
	cfg.nametype = attr(frames, "fg:nametype");
	cfg.countname = attr(frames, "fg:countname");
	cfg.width = num(frames, "width");
	// The tooltip is "NAME (COUNT, PCT%)" (plus "; DELTA%" in a diff); COUNT is
	// "1,234 COUNTNAME", a time or size ("1.20 s", "3.50 MiB"), or both.
	cfg.suffix = / \([^()]*, [0-9.]+%(; [-+]?[0-9.]+%)?\)$/;
	restore_state();
}

// --- events ---
window.addEventListener("click", function (e) {
	var g = find_group(e.target);
	if (g) {
		if (g.nodeName == "a" && !e.ctrlKey) return;
		e.preventDefault();
		zoom(g);
		save_state();
	} else if (e.target.id == "unzoom") {
		unzoom();
		save_state();
	} else if (e.target.id == "search") {
		search_prompt();
	} else if (e.target.id == "ignorecase") {
		toggle_ignorecase();
	}
}, false);
window.addEventListener("mouseover", function (e) {
	var g = find_group(e.target);
	if (g) details.nodeValue = cfg.nametype + " " + describe(g);
}, false);
window.addEventListener("mouseout", function (e) {
	if (find_group(e.target)) details.nodeValue = " ";
}, false);
window.addEventListener("keydown", function (e) {
	if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) {
		e.preventDefault();
		search_prompt();
	} else if (e.ctrlKey && e.keyCode === 73) {
		e.preventDefault();
		toggle_ignorecase();
	} else if (e.keyCode === 27 && zoomed) {
		unzoom();
		save_state();
	}
}, false);

// --- frames ---
function find_group(node) {
	while (node && node.parentNode) {
		if (node.parentNode.id == "frames") return node;
		node = node.parentNode;
	}
	return null;
}
function rect_of(g) { return g.getElementsByTagName("rect")[0]; }
function title_of(g) { return g.getElementsByTagName("title")[0].textContent; }
function name_of(g) {
	var t = title_of(g);
	return t.replace(cfg.suffix, "");
}
function fmt_pct(v) { return (Math.round(v * 100) / 100).toFixed(2); }
function describe(g) {
	var text = title_of(g);
	if (zoomed && zoomed !== g) {
		var w = num(rect_of(g), "fg:w"), zw = num(rect_of(zoomed), "fg:w");
		text += " [" + fmt_pct(100 * w / zw) + "% of " + name_of(zoomed) + "]";
	}
	return text;
}

// Places a frame's rectangle at [x, x+w) weight units of a view starting at `from` and
// `span` wide, and fits its label (flamegraph.pl's rule: one character and two dots).
function place(g, from, span) {
	var r = rect_of(g);
	var xp = 100 * (num(r, "fg:x") - from) / span;
	var wp = 100 * num(r, "fg:w") / span;
	if (xp < 0) { wp += xp; xp = 0; }
	if (xp + wp > 100) wp = 100 - xp;
	r.setAttribute("x", xp.toFixed(4) + "%");
	r.setAttribute("width", wp.toFixed(4) + "%");
	var fit = Math.floor(wp * cfg.width / 100 / (cfg.fontsize * cfg.fontwidth));
	var t = g.getElementsByTagName("text")[0];
	if (fit < 3) {
		if (t) t.textContent = "";
		return;
	}
	if (!t) {
		t = document.createElementNS(SVGNS, "text");
		var y = num(r, "y"), h = num(r, "height");
		t.setAttribute("y", (3 + y + h / 2).toFixed(2));
		g.appendChild(t);
	}
	t.setAttribute("x", (xp + 300 / cfg.width).toFixed(4) + "%");
	var name = name_of(g);
	t.textContent = name.length <= fit ? name : name.substring(0, fit - 2) + "..";
}

function zoom(g) {
	if (zoomed) reset_view();
	zoomed = g;
	var r = rect_of(g);
	var zx = num(r, "fg:x"), zw = num(r, "fg:w"), zy = num(r, "y");
	unzoombtn.classList.remove("hide");
	var el = frames.children;
	for (var i = 0; i < el.length; i++) {
		var e = el[i], a = rect_of(e);
		var ex = num(a, "fg:x"), ew = num(a, "fg:w"), ey = num(a, "y");
		var below = cfg.inverted ? ey < zy : ey > zy;
		if (below) {
			if (ex <= zx && ex + ew >= zx + zw) {
				e.classList.add("parent");
				place(e, ex, ew);
			} else {
				e.classList.add("hide");
			}
		} else if (ex < zx || ex >= zx + zw) {
			e.classList.add("hide");
		} else {
			place(e, zx, zw);
		}
	}
	if (searchTerm !== null) search(searchTerm);
}
function reset_view() {
	var el = frames.children;
	for (var i = 0; i < el.length; i++) {
		el[i].classList.remove("parent");
		el[i].classList.remove("hide");
		place(el[i], 0, cfg.total);
	}
}
function unzoom() {
	zoomed = null;
	unzoombtn.classList.add("hide");
	reset_view();
	if (searchTerm !== null) search(searchTerm);
}

// --- search ---
function search_prompt() {
	if (searchTerm === null) {
		var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
			(ignoreCase ? ", ignoring case" : ", case-sensitive"), "");
		if (term != null && term !== "") search(term);
	} else {
		reset_search();
	}
	save_state();
}
function toggle_ignorecase() {
	ignoreCase = !ignoreCase;
	if (ignoreCase) icbtn.classList.add("show"); else icbtn.classList.remove("show");
	if (searchTerm !== null) search(searchTerm);
	save_state();
}
function clear_highlight() {
	var el = frames.children;
	for (var i = 0; i < el.length; i++) {
		var r = rect_of(el[i]);
		var orig = attr(r, "fg:orig_fill");
		if (orig !== null) {
			r.setAttribute("fill", orig);
			r.removeAttribute("fg:orig_fill");
		}
	}
}
function reset_search() {
	clear_highlight();
	searchTerm = null;
	searchbtn.classList.remove("show");
	searchbtn.firstChild.nodeValue = "Search";
	matchedtxt.classList.add("hide");
	matchedtxt.firstChild.nodeValue = " ";
}
function search(term) {
	var re;
	try {
		re = new RegExp(term, ignoreCase ? "i" : "");
	} catch (err) {
		matchedtxt.classList.remove("hide");
		matchedtxt.firstChild.nodeValue = "Invalid regular expression";
		return;
	}
	clear_highlight();
	searchTerm = term;
	var el = frames.children;
	var matches = {};
	var span = zoomed ? num(rect_of(zoomed), "fg:w") : cfg.total;
	for (var i = 0; i < el.length; i++) {
		var e = el[i];
		if (e.classList.contains("hide") || e.classList.contains("parent")) continue;
		var r = rect_of(e);
		if (!re.test(name_of(e))) continue;
		r.setAttribute("fg:orig_fill", attr(r, "fill"));
		r.setAttribute("fill", cfg.searchcolor);
		var x = num(r, "fg:x"), w = num(r, "fg:w");
		if (matches[x] === undefined || w > matches[x]) matches[x] = w;
	}
	// Sum matched widths without counting a frame inside another matched frame twice.
	var xs = Object.keys(matches).map(Number).sort(function (a, b) { return a - b; });
	var count = 0, end = -1;
	for (var k = 0; k < xs.length; k++) {
		if (xs[k] >= end) {
			count += matches[xs[k]];
			end = xs[k] + matches[xs[k]];
		}
	}
	searchbtn.classList.add("show");
	searchbtn.firstChild.nodeValue = "Reset Search";
	matchedtxt.classList.remove("hide");
	var pct = 100 * count / span;
	matchedtxt.firstChild.nodeValue = "Matched: " + (pct == 100 ? "100" : pct.toFixed(1)) + "%";
}

// --- state in the URL: ?x=<fg:x>&y=<y>&s=<regex>&i=1 ---
function save_state() {
	try {
		var params = new URLSearchParams(window.location.search);
		["x", "y", "s", "i"].forEach(function (k) { params.delete(k); });
		if (zoomed) {
			var r = rect_of(zoomed);
			params.set("x", attr(r, "fg:x"));
			params.set("y", attr(r, "y"));
		}
		if (searchTerm !== null) params.set("s", searchTerm);
		if (ignoreCase) params.set("i", "1");
		var q = params.toString();
		history.replaceState(null, "", q ? "?" + q : window.location.pathname);
	} catch (err) {
		// file: URLs may refuse replaceState; the view still works.
	}
}
function restore_state() {
	var params;
	try { params = new URLSearchParams(window.location.search); } catch (err) { return; }
	if (params.get("i") == "1") {
		ignoreCase = true;
		icbtn.classList.add("show");
	}
	var x = params.get("x"), y = params.get("y");
	if (x !== null && y !== null) {
		var el = frames.children;
		for (var i = 0; i < el.length; i++) {
			var r = rect_of(el[i]);
			if (attr(r, "fg:x") === x && attr(r, "y") === y) {
				zoom(el[i]);
				break;
			}
		}
	}
	var s = params.get("s");
	if (s !== null && s !== "") search(s);
}
