import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { PathBand } from "../src/build/calibration.js";

/**
 * Average CAR path with its interval band, one colour per group, rendered headless to SVG by
 * Vega-Lite 5 + Vega 5 (no browser): the same data always gives the same file.
 */
export async function renderCarFigure(bands: readonly PathBand[], title: string): Promise<string> {
  const values = bands.map((b) => ({
    group: b.group,
    day: b.day,
    car: Math.round(b.car * 100) / 100,
    lo: Math.round(b.lo * 100) / 100,
    hi: Math.round(b.hi * 100) / 100,
  }));
  const color = { field: "group", type: "nominal", title: null, sort: null } as const;
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: { text: title, fontSize: 12 },
    width: 560,
    height: 300,
    data: { values },
    encoding: {
      x: {
        field: "day",
        type: "quantitative",
        title: "days from unlock (0 = last close before it)",
        scale: { domain: [-30, 30] },
      },
    },
    layer: [
      {
        mark: { type: "area", opacity: 0.15 },
        encoding: {
          y: { field: "lo", type: "quantitative", title: "cumulative abnormal return since day −30 (%)" },
          y2: { field: "hi" },
          color,
        },
      },
      {
        mark: { type: "line", strokeWidth: 2 },
        encoding: { y: { field: "car", type: "quantitative" }, color },
      },
      {
        mark: { type: "rule", strokeDash: [4, 4], color: "#666" },
        data: { values: [{ day: 0 }] },
        encoding: { x: { field: "day", type: "quantitative" } },
      },
    ],
    config: { legend: { orient: "bottom", columns: 2 } },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  const svg = await view.toSVG();
  view.finalize();
  return `${svg}\n`;
}
