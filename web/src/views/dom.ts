// Tiny DOM helpers. Text always goes through textContent: profile names are data, never
// markup, so nothing here ever assigns innerHTML.

type Attrs = Record<string, string | boolean | number | undefined | null>;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'class') e.className = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null) e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return e;
}

export function setText(e: Element, text: string): void {
  if (e.textContent !== text) e.textContent = text;
}

let nextId = 0;

/** A prefix for element ids no other viewer on the page uses. */
export function uniquePrefix(): string {
  return `kiln${++nextId}`;
}
