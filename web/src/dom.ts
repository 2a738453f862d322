/** A child of `element`: nodes and text; null, undefined and false are left out. */
export type Child = Node | string | null | undefined | false;

/** Creates an HTML element with attributes (`class`, `data-*`, ...) and children. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) node.setAttribute(name, "");
    else if (value !== false) node.setAttribute(name, value);
  }
  node.append(...children.filter((child): child is Node | string => child !== null && child !== undefined && child !== false));
  return node;
}

/** Creates an SVG element with attributes. */
export function svgElement<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** A button that runs `action` on click. */
export function button(label: string, action: () => void, attributes: Record<string, string | boolean> = {}): HTMLButtonElement {
  const node = element("button", { type: "button", ...attributes }, label);
  node.addEventListener("click", action);
  return node;
}

/** Pretty JSON for display. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
