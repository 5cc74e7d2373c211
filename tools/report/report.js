// dtsim's HTML report: draws the figures of one command's JSON document (the same document `--json` writes, in the
// page's #dtsim-document element) with Vega-Lite, inlined in the page. Every axis names its unit. When every figure
// has rendered, <body data-rendered="N"> gives their count (the browser test waits for it); a figure that fails
// leaves its error in its place and on the console.
"use strict";

(function () {
  const doc = JSON.parse(document.getElementById("dtsim-document").textContent);
  const main = document.getElementById("report");
  const VL = "https://vega.github.io/schema/vega-lite/v6.json"; // names the grammar's version; nothing is fetched
  const pending = [];

  // ---- page helpers ----
  function element(tag, attributes, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function paragraph(text, cls) {
    main.appendChild(element("p", cls ? { class: cls } : {}, text));
  }
  // A section with a heading, a caption and the chart drawn from a Vega-Lite spec.
  function figure(id, title, caption, spec) {
    const section = element("section", { class: "figure", "data-figure": id });
    section.appendChild(element("h2", {}, title));
    if (caption) section.appendChild(element("p", { class: "caption" }, caption));
    const chart = element("div", { class: "chart" });
    section.appendChild(chart);
    main.appendChild(section);
    const full = Object.assign({ $schema: VL, width: 560, height: 260 }, spec);
    pending.push(
      vegaEmbed(chart, full, { renderer: "svg", actions: false }).catch((error) => {
        chart.appendChild(element("p", { class: "error" }, "This figure failed: " + error));
        console.error("figure " + id + ": " + error);
      })
    );
  }
  // A plain table: header cells, then rows of cells.
  function table(id, title, header, rows) {
    const section = element("section", { class: "table", "data-table": id });
    section.appendChild(element("h2", {}, title));
    const t = element("table");
    const head = element("tr");
    for (const h of header) head.appendChild(element("th", {}, h));
    t.appendChild(head);
    for (const row of rows) {
      const tr = element("tr");
      for (const cell of row) tr.appendChild(element("td", {}, cell));
      t.appendChild(tr);
    }
    section.appendChild(t);
    main.appendChild(section);
  }
  const fixed = (value, digits) => (value === null || value === undefined ? "-" : Number(value).toFixed(digits));
  // Every quantity in the unit the command line shows it in: io/units.hpp writes its ladders into the page
  // (#dtsim-units), and the rule is the same: the largest unit whose `from` the value reaches, and for an axis or a
  // column the unit of its largest value, so that a run reads the same in the terminal, the CSV and here.
  const UNITS = JSON.parse(document.getElementById("dtsim-units").textContent);
  function unitFor(quantity, values) {
    const finite = [].concat(values).filter((v) => Number.isFinite(v)).map(Math.abs);
    const largest = finite.length > 0 ? Math.max(...finite) : 0;
    let chosen = UNITS[quantity].units[0];
    for (const u of UNITS[quantity].units) if (largest >= u.from) chosen = u;
    return chosen;
  }
  function numberIn(unit, value) {
    const shown = value / unit.scale, a = Math.abs(shown);
    return shown.toFixed(unit.decimals >= 0 ? unit.decimals : a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2);
  }
  // "345.19 ms", "97.49 MiB", "441 Wh", "$3.42", as report::format_seconds, format_bytes, ... write them.
  function quantity(q, value) {
    if (q === "money") return "$" + Number(value).toFixed(2);
    if (q === "time" && Math.abs(value) < 1e-12) return "0 s";
    const u = unitFor(q, value);
    return `${numberIn(u, value)} ${u.symbol}`;
  }

  // ---- the page head: what produced it ----
  function provenance(p) {
    if (!p) return;
    const parts = ["dtsim " + p.dtsim_version, "commit " + p.git_commit];
    if (p.scenario_hash) parts.push("scenario " + p.scenario_hash);
    paragraph(parts.join(" \u00b7 "), "provenance");
  }

  // ---- run ----
  const STREAM_ORDER = ["compute", "comm", "p2p", "input"]; // graph::Stream names, top to bottom
  function runFigures(r, label) {
    const b = r.breakdown_seconds_per_iteration;
    const unit = r.sample_unit || "samples";
    // The figures a decision is made on, in one line each: how fast, how well the GPUs are used, what it costs.
    const mfu = r.model_flops && r.model_flops.mfu > 0
      ? `; model FLOPs utilization ${fixed(100 * r.model_flops.mfu, 1)}% (${fixed(r.model_flops.tflops_per_gpu, 1)} TFLOP/s per GPU)`
      : "";
    paragraph(
      `${r.nodes} node(s), ${r.gpus} GPU(s); iteration ${quantity("time", r.iteration_seconds.mean)}; ` +
        `throughput ${fixed(r.throughput_samples_per_second, 1)} ${unit}/s${mfu}; fidelity ${r.fidelity.mode}.`,
      "summary"
    );
    const c = r.cost_usd || {};
    if (c.per_hour !== null && c.per_hour !== undefined)
      paragraph(
        `Cost: ${quantity("money", c.per_hour)} per hour` +
          (c.per_epoch !== null && r.epoch_seconds > 0 ? `, ${quantity("money", c.per_epoch)} per epoch` : "") +
          (c.run !== null && c.run > 0 && c.run !== c.per_epoch ? `, ${quantity("money", c.run)} for the run` : "") +
          ".",
        "summary"
      );
    // Where the time goes: the whole job by dimension, then each GPU group, in the iteration's unit.
    const tu = unitFor("time", r.iteration_seconds.mean);
    const parts = [{ group: "all GPUs", part: "compute", time: b.compute / tu.scale }];
    for (const [dimension, seconds] of Object.entries(b.exposed_by_dimension || {}))
      if (seconds > 0) parts.push({ group: "all GPUs", part: "exposed " + dimension + " communication", time: seconds / tu.scale });
    parts.push({ group: "all GPUs", part: "idle (waiting, bubble)", time: b.idle / tu.scale });
    for (const g of r.gpu_groups || []) {
      const name = `${g.name} (${g.gpus} x ${g.gpu})`;
      parts.push({ group: name, part: "compute", time: g.compute_seconds_per_iteration / tu.scale });
      parts.push({ group: name, part: "exposed communication", time: g.exposed_communication_seconds_per_iteration / tu.scale });
      parts.push({ group: name, part: "idle (waiting, bubble)", time: g.idle_seconds_per_iteration / tu.scale });
    }
    const bubble = r.parallelism ? ` The pipeline bubble is ${fixed(100 * r.parallelism.bubble_fraction, 1)}% of the iteration, inside idle.` : "";
    figure(
      "breakdown",
      "Where an iteration's time goes",
      "Mean over GPUs of one iteration: compute, communication not hidden behind compute (by parallel dimension), and idle." + bubble,
      {
        data: { values: parts },
        height: { step: 28 },
        mark: { type: "bar", tooltip: true },
        encoding: {
          y: { field: "group", type: "nominal", title: "GPUs", sort: null },
          x: { field: "time", type: "quantitative", title: `time per iteration (${tu.symbol})`, stack: "zero" },
          color: { field: "part", type: "nominal", title: "part", sort: null, legend: { labelLimit: 300 } },
          order: { field: "part", sort: "ascending" },
        },
      }
    );
    // Memory: per pipeline stage when there are stages, else the items on one GPU; the GPU's capacity as a rule.
    const m = r.memory_per_gpu;
    const stages = r.parallelism && r.parallelism.stage_memory_bytes;
    const bu = unitFor("bytes", [m.capacity_bytes, ...(stages || [m.total_bytes])]);
    const bars =
      stages && stages.length > 1
        ? (r.parallelism.stage_memory_items || stages.map((bytes) => [{ name: "total", bytes }])).flatMap((items, i) =>
            items.filter((item) => item.bytes > 0).map((item) => ({ what: "stage " + i, item: item.name, size: item.bytes / bu.scale })))
        : m.items.map((item) => ({ what: "one GPU", item: item.name, size: item.bytes / bu.scale }));
    figure(
      "memory",
      stages && stages.length > 1 ? "Memory per GPU by pipeline stage" : "Memory per GPU",
      `The GPU holds ${quantity("bytes", m.capacity_bytes)} (the dashed rule).`,
      {
        height: { step: 28 },
        layer: [
          {
            data: { values: bars },
            mark: { type: "bar", tooltip: true },
            encoding: {
              y: { field: "what", type: "nominal", title: stages && stages.length > 1 ? "pipeline stage" : "", sort: null },
              x: { field: "size", type: "quantitative", title: `memory (${bu.symbol})`, stack: "zero" },
              color: { field: "item", type: "nominal", title: "held for" },
            },
          },
          {
            data: { values: [{ capacity: m.capacity_bytes / bu.scale }] },
            mark: { type: "rule", strokeDash: [6, 4], color: "#444" },
            encoding: { x: { field: "capacity", type: "quantitative" } },
          },
        ],
      }
    );
    // The busiest links of each kind (NVLink, PCIe, NICs, network switches; the kind from the platform's link names):
    // a lightly used class shows beside the saturated one, each bar coloured by its kind.
    const links = r.busiest_links_by_kind || r.busiest_links || [];
    if (links.length > 0)
      figure(
        "links",
        "Busiest links of each kind",
        "Share of the simulated time each link carried data at its bandwidth: the busiest three of each kind of link.",
        {
          data: { values: links.map((l) => ({ link: l.link, kind: l.kind, percent: 100 * l.utilization, carried: quantity("bytes", l.bytes) })) },
          height: { step: 20 },
          mark: { type: "bar", tooltip: true },
          encoding: {
            y: { field: "link", type: "nominal", title: "link", sort: null },
            x: { field: "percent", type: "quantitative", title: "utilization (%)", scale: { domain: [0, 100] } },
            color: { field: "kind", type: "nominal", title: "kind of link" },
          },
        }
      );
    const t = r.timeline;
    if (t && t.events.length > 0) {
      const tlu = unitFor("time", Math.max(...t.events.map((e) => e.end_ms)) / 1e3); // the iteration's span's unit
      const rows = t.events.map((e) => ({
        lane: `rank ${e.rank} \u00b7 ${e.stream}`,
        rank: e.rank,
        stream: e.stream,
        name: e.name,
        kind: e.kind || e.stream,
        start: e.start_ms / 1e3 / tlu.scale,
        end: e.end_ms / 1e3 / tlu.scale,
      }));
      rows.sort((a, b) => a.rank - b.rank || STREAM_ORDER.indexOf(a.stream) - STREAM_ORDER.indexOf(b.stream));
      figure(
        "timeline",
        "One iteration on a sample of GPUs",
        `Iteration ${t.iteration} on ranks ${t.ranks.join(", ")}: each stream's operations from the iteration's first start, coloured by what they are (compute, each parallel dimension's communication, the pipeline's transfers).`,
        {
          data: { values: rows },
          height: { step: 16 },
          mark: { type: "bar", tooltip: true },
          encoding: {
            y: { field: "lane", type: "ordinal", title: "rank and stream", sort: null },
            x: { field: "start", type: "quantitative", title: `time from the iteration's start (${tlu.symbol})` },
            x2: { field: "end" },
            color: { field: "kind", type: "nominal", title: "operation", legend: { labelLimit: 300 } },
            tooltip: [
              { field: "name", title: "operation" },
              { field: "kind", title: "kind" },
              { field: "start", title: `start (${tlu.symbol})`, format: ".3f" },
              { field: "end", title: `end (${tlu.symbol})`, format: ".3f" },
            ],
          },
        }
      );
    }
  }

  // The kind of a link from the name the platform gives it (sim/engine/platform.cpp, topologies/network_graph.cpp):
  // "gpu3-nvlink", "node0-nvswitch...", "gpu3-pcie", "node1-nic", "leaf2-uplink", "leaf0-spine1".
  // ---- sweep ----
  function sweepFigures(d) {
    const ok = d.points.filter((p) => p.ok);
    if (ok.length === 0) return paragraph("No point of the sweep ran.", "error");
    const first = ok[0].result;
    const unit = first.sample_unit || "samples";
    const rows = [];
    for (const p of ok) {
      const r = p.result;
      const ideal = first.throughput_samples_per_second * (r.gpus / first.gpus);
      rows.push({ nodes: p.nodes, series: "simulated", throughput: r.throughput_samples_per_second, speedup: p.speedup });
      rows.push({ nodes: p.nodes, series: "ideal (linear in GPUs)", throughput: ideal, speedup: r.gpus / first.gpus });
    }
    const xNodes = { field: "nodes", type: "quantitative", title: "nodes", scale: { type: "log", base: 2 }, axis: { values: ok.map((p) => p.nodes) } };
    const line = { type: "line", point: true, tooltip: true };
    const series = { field: "series", type: "nominal", title: "", sort: ["simulated"] };
    // The dash follows the colour's series: one legend (the colour's), not a second one in black for the dashes.
    const dash = { ...series, legend: null };
    // Both axes logarithmic: against the nodes' log axis a linear y would draw linear scaling as an exponential; on
    // log-log axes it is a straight line of slope one and the simulated series' droop shows as it is.
    const logY = { type: "log", base: 2 };
    figure("throughput", "Throughput against nodes", `Simulated throughput beside the ideal, linear in GPUs from the first point (both axes logarithmic).`, {
      data: { values: rows },
      mark: line,
      encoding: { x: xNodes, y: { field: "throughput", type: "quantitative", title: `throughput (${unit}/s)`, scale: logY }, color: series, strokeDash: dash },
    });
    figure("speedup", "Speedup against nodes", "Throughput over the first point's, beside the ideal (the GPU ratio; both axes logarithmic).", {
      data: { values: rows },
      mark: line,
      encoding: { x: xNodes, y: { field: "speedup", type: "quantitative", title: "speedup (x)", scale: logY }, color: series, strokeDash: dash },
    });
    figure("efficiency", "Scaling efficiency", "Speedup over the GPU ratio: 100% is linear scaling.", {
      data: { values: ok.map((p) => ({ nodes: p.nodes, percent: 100 * p.efficiency })) },
      mark: line,
      encoding: { x: xNodes, y: { field: "percent", type: "quantitative", title: "efficiency (%)", scale: { domainMin: 0 } } },
    });
    const priced = ok.filter((p) => p.result.cost_usd.per_epoch !== null || p.result.cost_usd.per_hour !== null);
    if (priced.length > 0) {
      const perEpoch = priced[0].result.cost_usd.per_epoch !== null;
      figure("cost", perEpoch ? "Cost per epoch" : "Cost per hour", "At the cluster's price per node-hour.", {
        data: { values: priced.map((p) => ({ nodes: p.nodes, usd: perEpoch ? p.result.cost_usd.per_epoch : p.result.cost_usd.per_hour })) },
        mark: line,
        encoding: { x: xNodes, y: { field: "usd", type: "quantitative", title: perEpoch ? "cost per epoch (USD)" : "cost per hour (USD)" } },
      });
    } else {
      paragraph("No cost figure: the scenario's cluster has no price (give --price-per-hour or an instance).", "note");
    }
    // The command line's table, each column in one unit (io/units.hpp's rule: its largest value's).
    const iu = unitFor("time", ok.map((p) => p.result.iteration_seconds.mean));
    const epochs = ok.every((p) => p.result.epoch_seconds > 0);
    const eu = unitFor("time", ok.map((p) => p.result.epoch_seconds));
    table(
      "points",
      "Points",
      ["nodes", "GPUs", `iteration (${iu.symbol})`, `throughput (${unit}/s)`, "speedup", "efficiency (%)"].concat(epochs ? [`time/epoch (${eu.symbol})`] : []),
      d.points.map((p) =>
        p.ok
          ? [p.nodes, p.result.gpus, numberIn(iu, p.result.iteration_seconds.mean), fixed(p.result.throughput_samples_per_second, 1), fixed(p.speedup, 2), fixed(100 * p.efficiency, 1)].concat(epochs ? [numberIn(eu, p.result.epoch_seconds)] : [])
          : [p.nodes, "-", "failed: " + p.error, "", "", ""]
      )
    );
  }

  // Bins over the values' range widened by 5% of their size each side, so that trials alike (a run without
  // interruptions) make narrow bars around their value rather than one bar across the whole axis.
  function histogramBin(values) {
    const lo = Math.min(...values), hi = Math.max(...values);
    const pad = Math.max((hi - lo) * 0.05, Math.abs(hi) * 0.05, 1e-9);
    return { maxbins: 30, extent: [lo - pad, hi + pad] };
  }
  // ---- compare ----
  function compareFigures(d) {
    const ok = d.results.filter((r) => !r.error);
    if (ok.length === 0) return paragraph("No strategy ran.", "error");
    const unit = ok[0].sample_unit || "samples";
    const parts = [];
    const tu = unitFor("time", ok.map((r) => r.iteration_seconds.mean));
    for (const r of ok) {
      const b = r.breakdown_seconds_per_iteration;
      parts.push({ strategy: r.strategy.name, part: "compute", time: b.compute / tu.scale });
      parts.push({ strategy: r.strategy.name, part: "exposed communication", time: b.exposed_communication / tu.scale });
      parts.push({ strategy: r.strategy.name, part: "idle (waiting)", time: b.idle / tu.scale });
    }
    figure("breakdown", "Where an iteration's time goes, by strategy", "Mean over workers of one iteration (or one local step for asynchronous strategies).", {
      data: { values: parts },
      height: { step: 28 },
      mark: { type: "bar", tooltip: true },
      encoding: {
        y: { field: "strategy", type: "nominal", title: "strategy", sort: null },
        x: { field: "time", type: "quantitative", title: `time per iteration (${tu.symbol})`, stack: "zero" },
        color: { field: "part", type: "nominal", title: "part", sort: null, legend: { labelLimit: 300 } },
      },
    });
    const bar = (id, title, caption, field, axis, values) =>
      figure(id, title, caption, {
        data: { values },
        height: { step: 28 },
        mark: { type: "bar", tooltip: true },
        encoding: { y: { field: "strategy", type: "nominal", title: "strategy", sort: null }, x: { field, type: "quantitative", title: axis } },
      });
    bar("throughput", "Throughput by strategy", "Samples processed per second by the whole job (asynchronous: not progress; see docs/guide.md on staleness).", "throughput", `throughput (${unit}/s)`,
      ok.map((r) => ({ strategy: r.strategy.name, throughput: r.throughput_samples_per_second })));
    const su = unitFor("bytes", ok.map((r) => r.bytes_sent_per_gpu_per_iteration));
    bar("traffic", "Bytes each GPU sends per iteration", "From the simulated transfers.", "sent", `bytes sent per GPU per iteration (${su.symbol})`,
      ok.map((r) => ({ strategy: r.strategy.name, sent: r.bytes_sent_per_gpu_per_iteration / su.scale })));
    // What the choice is made on: how long an epoch (and the whole run) takes and what it costs. The price per hour
    // alone is the same for every strategy but those that add server nodes, so it is drawn only when the scenario
    // gives neither a dataset nor a run length.
    const epochs = ok.filter((r) => r.epoch_seconds > 0);
    if (epochs.length > 0) {
      const eu = unitFor("time", epochs.map((r) => r.epoch_seconds));
      bar("epoch", "Time per epoch by strategy", "One pass over the dataset at the simulated throughput.", "time", `time per epoch (${eu.symbol})`,
        epochs.map((r) => ({ strategy: r.strategy.name, time: r.epoch_seconds / eu.scale })));
    }
    const perEpoch = ok.filter((r) => r.cost_usd.per_epoch !== null && r.epoch_seconds > 0);
    // The run's cost where the scenario's length is not one epoch (else it is the bar beside it again).
    const perRun = ok.filter((r) => r.cost_usd.run !== null && r.cost_usd.run > 0 && r.cost_usd.run !== r.cost_usd.per_epoch);
    if (perEpoch.length > 0)
      bar("cost-epoch", "Cost per epoch by strategy", "At the cluster's price per node-hour (parameter servers add their nodes).", "usd", "cost per epoch (USD)",
        perEpoch.map((r) => ({ strategy: r.strategy.name, usd: r.cost_usd.per_epoch })));
    if (perRun.length > 0)
      bar("cost-run", "Cost of the run by strategy", "The scenario's training length at the simulated iteration time and the cluster's price.", "usd", "cost of the run (USD)",
        perRun.map((r) => ({ strategy: r.strategy.name, usd: r.cost_usd.run })));
    const priced = ok.filter((r) => r.cost_usd.per_hour !== null);
    if (priced.length > 0 && perEpoch.length === 0 && perRun.length === 0)
      bar("cost", "Cost per hour by strategy", "At the cluster's price per node-hour (parameter servers add their nodes).", "usd", "cost per hour (USD)",
        priced.map((r) => ({ strategy: r.strategy.name, usd: r.cost_usd.per_hour })));
    for (const r of d.results.filter((r) => r.error)) paragraph(`${r.strategy.name} failed: ${r.error}`, "error");
  }

  function policyFigures(d) {
    const wu = unitFor("time", d.results.map((r) => r.summary.wall_seconds.mean));
    const rows = d.results.map((r) => ({
      policy: r.policy.label,
      time: r.summary.wall_seconds.mean / wu.scale,
      p90: r.summary.wall_seconds.p90 / wu.scale,
      goodput: 100 * r.summary.goodput.mean,
      cost: r.summary.cost_usd.mean,
    }));
    const bar = (id, title, caption, field, axis) =>
      figure(id, title, caption, {
        data: { values: rows },
        height: { step: 28 },
        mark: { type: "bar", tooltip: true },
        encoding: { y: { field: "policy", type: "nominal", title: "policy", sort: null }, x: { field, type: "quantitative", title: axis } },
      });
    bar("time-to-train", "Time to train by policy", "Mean over the seeded trials.", "time", `time to train (${wu.symbol})`);
    bar("goodput", "Goodput by policy", "Share of the wall time spent on steps that count.", "goodput", "goodput (%)");
    bar("cost", "Cost by policy", "Mean over the trials, at the cluster's prices (0 without a price).", "cost", "cost (USD)");
  }

  // ---- train ----
  function trainFigures(d) {
    const wu = unitFor("time", d.trials.map((t) => t.wall_seconds));
    const [per, unitName] = [wu.scale, wu.symbol];
    const trials = d.trials.map((t, i) => ({ trial: i, time: t.wall_seconds / per, usd: t.cost_usd, goodput: 100 * t.goodput }));
    paragraph(
      `${d.trials.length} trials of ${d.steps} steps on ${d.nodes} node(s): time to train ${fixed(d.summary.wall_seconds.mean / per, 2)} ${unitName} on average ` +
        `(p90 ${fixed(d.summary.wall_seconds.p90 / per, 2)}), goodput ${fixed(100 * d.summary.goodput.mean, 1)}%.`,
      "summary"
    );
    const counts = { aggregate: "count", type: "quantitative", title: "trials", axis: { tickMinStep: 1, format: "d" } };
    figure("time-to-train", "Time to train over the trials", "Each seeded trial draws its own failures and interruptions.", {
      data: { values: trials },
      mark: { type: "bar", tooltip: true },
      encoding: {
        x: { field: "time", type: "quantitative", bin: histogramBin(trials.map((t) => t.time)), title: `time to train (${unitName})` },
        y: counts,
      },
    });
    const mean = (key) => d.trials.reduce((s, t) => s + t[key], 0) / Math.max(1, d.trials.length) / per;
    figure("wall-time", "Where the wall time goes", "Mean over the trials.", {
      data: {
        values: [
          { part: "useful steps", time: mean("useful_seconds") },
          { part: "checkpoints", time: mean("checkpoint_seconds") },
          { part: "lost work", time: mean("lost_seconds") },
          { part: "down (restarts, waits)", time: mean("down_seconds") },
        ],
      },
      height: { step: 28 },
      mark: { type: "bar", tooltip: true },
      encoding: { y: { field: "part", type: "nominal", title: "", sort: null }, x: { field: "time", type: "quantitative", title: `time (${unitName})` } },
    });
    if (d.trials.some((t) => t.cost_usd > 0))
      figure("cost", "Cost over the trials", "At the cluster's prices.", {
        data: { values: trials },
        mark: { type: "bar", tooltip: true },
        encoding: {
          x: { field: "usd", type: "quantitative", bin: histogramBin(trials.map((t) => t.usd)), title: "cost (USD)" },
          y: counts,
        },
      });
  }

  // ---- search ----
  // The layouts no other beats on both axes (higher throughput, lower `cost`).
  function front(points, cost) {
    const sorted = points.slice().sort((a, b) => a[cost] - b[cost] || b.throughput - a.throughput);
    const out = [];
    let best = -Infinity;
    for (const p of sorted)
      if (p.throughput > best) {
        out.push(p);
        best = p.throughput;
      }
    return out;
  }
  function searchFigures(d) {
    const unit = d.unit.name;
    const field = `throughput_${unit}_per_second`;
    const costField = `cost_usd_per_million_${unit}`;
    const layout = (c) =>
      `tp${c.tensor} pp${c.pipeline} dp${c.data}` + (c.expert > 1 ? ` ep${c.expert}` : "") + ` mb${c.micro_batch}` +
      (c.zero_stage ? ` z${c.zero_stage}` : "") + (c.recompute !== "none" ? ` rc:${c.recompute}` : "");
    const simulated = d.candidates
      .filter((c) => c.ok)
      .map((c) => ({ layout: layout(c), throughput: c[field], usd: c[costField], memory: c.memory_bytes_per_gpu, estimate: c.estimate_seconds, iteration: c.iteration_seconds, gpus: c.gpus }));
    if (simulated.length === 0) return paragraph("No candidate was simulated.", "error");
    const priced = simulated.every((p) => p.usd !== null);
    const mu = unitFor("bytes", simulated.map((p) => p.memory));
    for (const p of simulated) p.size = p.memory / mu.scale;
    const cost = priced ? "usd" : "size";
    const costTitle = priced ? `cost (USD per million ${unit})` : `memory per GPU (${mu.symbol})`;
    const best = new Set(d.best_by_throughput.slice(0, 5).map((i) => layout(d.candidates[i])));
    // One label per spot: layouts that simulate to the same throughput and cost (recomputation that costs nothing
    // where memory is not short) share it, instead of printing over each other.
    const spots = new Map();
    for (const p of simulated.filter((p) => best.has(p.layout))) {
      const key = `${p[cost]}|${p.throughput}`;
      if (spots.has(key)) spots.get(key).layout += " / " + p.layout;
      else spots.set(key, { ...p });
    }
    const labelled = [...spots.values()];
    figure(
      "front",
      priced ? "Throughput against cost" : "Throughput against memory per GPU",
      `Every simulated layout; in red those no other beats on both (joined by a line where there are several); the best five by throughput are labelled.` +
        (priced ? "" : " (No price: memory per GPU stands in for cost.)"),
      {
        layer: [
          {
            data: { values: simulated },
            mark: { type: "point", filled: true, opacity: 0.6, tooltip: true },
            encoding: {
              x: { field: cost, type: "quantitative", title: costTitle, scale: { zero: false } },
              y: { field: "throughput", type: "quantitative", title: `throughput (${unit}/s)`, scale: { zero: false } },
            },
          },
          {
            data: { values: front(simulated, cost) },
            mark: { type: "line", color: "#d62728", point: { color: "#d62728", size: 70 } },
            encoding: { x: { field: cost, type: "quantitative" }, y: { field: "throughput", type: "quantitative" } },
          },
          {
            data: { values: labelled },
            mark: { type: "text", align: "left", dx: 6, dy: -6, fontSize: 10 },
            encoding: { x: { field: cost, type: "quantitative" }, y: { field: "throughput", type: "quantitative" }, text: { field: "layout" } },
          },
        ],
      }
    );
    const estimated = simulated.filter((p) => p.estimate !== null);
    const eu = unitFor("time", estimated.map((p) => Math.max(p.estimate, p.iteration)));
    if (estimated.length > 0)
      figure("estimate", "The closed-form estimate against the simulation", "Each simulated layout's iteration by both; the diagonal is agreement.", {
        layer: [
          {
            data: { values: estimated.map((p) => ({ layout: p.layout, estimate: p.estimate / eu.scale, simulated: p.iteration / eu.scale })) },
            mark: { type: "point", filled: true, tooltip: true },
            encoding: {
              x: { field: "estimate", type: "quantitative", title: `estimated iteration (${eu.symbol})` },
              y: { field: "simulated", type: "quantitative", title: `simulated iteration (${eu.symbol})` },
            },
          },
          {
            data: { values: [{ v: 0 }, { v: Math.max(...estimated.map((p) => Math.max(p.estimate, p.iteration) / eu.scale)) }] },
            mark: { type: "line", strokeDash: [4, 4], color: "#888" },
            encoding: { x: { field: "v", type: "quantitative" }, y: { field: "v", type: "quantitative" } },
          },
        ],
      });
    const c = d.counts;
    paragraph(`Candidates: ${c.enumerated} enumerated, ${c.invalid} invalid, ${c.do_not_fit} do not fit in GPU memory, ${c.estimated} estimated, ${c.simulated} simulated, ${c.failed} failed.`, "note");
  }

  // ---- plan ----
  function planFigures(d) {
    // The text report's unit: that of the longest time it shows, a plan's p90 or a cluster's screened time.
    const pu = unitFor("time", [...d.plans.map((p) => p.time_to_train_seconds_p90),
                                ...d.clusters.map((c) => c.screened_time_to_train_seconds ?? 0)]);
    const [unitName, unitSeconds] = [pu.symbol, pu.scale];
    const days = (s) => s / unitSeconds;
    const plans = d.plans.map((p, i) => ({
      plan: `${p.nodes} x ${p.instance} ${p.capacity}`,
      instance: p.instance,
      capacity: p.capacity,
      days: days(p.time_to_train_seconds_mean),
      days90: days(p.time_to_train_seconds_p90),
      usd: p.cost_usd_mean,
      usd90: p.cost_usd_p90,
      front: p.on_front,
      chosen: i === d.cheapest_on_time || i === d.fastest_in_budget,
    }));
    if (plans.length === 0) return paragraph("No plan ran.", "error");
    const chosen = (i, what) => (i === null || i === undefined ? "" : ` ${what}: ${plans[i].plan}.`);
    paragraph(`${d.steps} steps of ${d.global_batch} samples.` + chosen(d.cheapest_on_time, "Cheapest on time") + chosen(d.fastest_in_budget, "Fastest within budget") + (d.binding ? ` ${d.binding}.` : ""), "summary");
    const x = { field: "days", type: "quantitative", title: `time to train (${unitName}, mean; bar to p90)`, scale: { zero: false } };
    const y = { field: "usd", type: "quantitative", title: "cost (USD, mean; bar to p90)", scale: { zero: false } };
    const rules = [];
    if (d.deadline_seconds !== null) rules.push({ data: { values: [{ v: days(d.deadline_seconds) }] }, mark: { type: "rule", strokeDash: [4, 4], color: "#d62728" }, encoding: { x: { field: "v", type: "quantitative" } } });
    if (d.budget_usd !== null) rules.push({ data: { values: [{ v: d.budget_usd }] }, mark: { type: "rule", strokeDash: [4, 4], color: "#d62728" }, encoding: { y: { field: "v", type: "quantitative" } } });
    figure(
      "front",
      "Time to train against cost",
      "Each plan (a cluster's best simulated layout, on demand or on spot) at its mean over the whole-run trials, with bars to its p90; the line joins the plans no other beats on both; the chosen plan is ringed; dashed: the deadline and the budget.",
      {
        layer: [
          { data: { values: plans }, mark: { type: "rule", opacity: 0.5 }, encoding: { x, x2: { field: "days90" }, y } },
          { data: { values: plans }, mark: { type: "rule", opacity: 0.5 }, encoding: { x, y, y2: { field: "usd90" } } },
          {
            data: { values: plans },
            mark: { type: "point", filled: true, size: 80, tooltip: true },
            encoding: { x, y, color: { field: "instance", type: "nominal" }, shape: { field: "capacity", type: "nominal" } },
          },
          { data: { values: plans.filter((p) => p.front).sort((a, b) => a.days - b.days) }, mark: { type: "line", color: "#888" }, encoding: { x, y } },
          { data: { values: plans.filter((p) => p.chosen) }, mark: { type: "point", size: 300, color: "#d62728", strokeWidth: 2 }, encoding: { x, y } },
          ...rules,
        ],
      }
    );
  }

  // ---- collective ----
  function collectiveFigures(d) {
    const rows = d.points.filter((p) => p.ok).map((p) => ({
      bytes: p.size_bytes,
      algorithm: `${p.algorithm} / ${p.protocol}`,
      busbw: p.busbw_bytes_per_second / 1e9,
      us: p.time_seconds * 1e6,
    }));
    paragraph(`${d.operation} over ${d.ranks} ranks on ${d.nodes} node(s) of ${d.gpu}, ${d.fidelity} fidelity.`, "summary");
    // Ticks at the sizes run, labelled in binary units as nccl-tests' sizes are (1 MiB = 2^20 bytes).
    const binary =
      "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + ' GiB' : " +
      "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' MiB' : " +
      "datum.value >= 1024 ? format(datum.value / 1024, '~g') + ' KiB' : datum.value + ' B'";
    const x = {
      field: "bytes",
      type: "quantitative",
      title: "message size (bytes)",
      scale: { type: "log", base: 2 },
      axis: { values: [...new Set(rows.map((r) => r.bytes))], labelExpr: binary },
    };
    const color = { field: "algorithm", type: "nominal", title: "algorithm / protocol" };
    // The peak that binds: across nodes the node's NICs, inside one node a GPU's port into the fabric (datasheet).
    const peaks = d.link_peaks_bytes_per_second || {};
    const peak = peaks.network ? { label: "the node's NICs", gbs: peaks.network / 1e9 } : peaks.fabric ? { label: "a GPU's fabric port", gbs: peaks.fabric / 1e9 } : null;
    const busbw = { x, y: { field: "busbw", type: "quantitative", title: "bus bandwidth (GB/s)" } };
    figure("busbw", "Bus bandwidth against size", "nccl-tests' bus bandwidth: algorithm bandwidth times its operation's factor." +
      (peak
        ? ` The dashed line is ${peak.label}' datasheet bandwidth: a ring's bus bandwidth cannot pass it; a tree or an in-switch reduction, which reduce inside the node before the network, can.`
        : ""), {
      layer: [
        { data: { values: rows }, mark: { type: "line", point: true, tooltip: true }, encoding: { ...busbw, color } },
        ...(peak
          ? [
              { data: { values: [peak] }, mark: { type: "rule", strokeDash: [6, 4], color: "#555" }, encoding: { y: { field: "gbs", type: "quantitative" } } },
              {
                data: { values: [peak] },
                mark: { type: "text", align: "left", dx: 4, dy: -6, color: "#555" },
                encoding: { y: { field: "gbs", type: "quantitative" }, x: { value: 0 }, text: { value: `${peak.label}: ${fixed(peak.gbs, 0)} GB/s` } },
              },
            ]
          : []),
      ],
    });
    figure("time", "Time against size", "One collective, from the first rank's start to the last rank's end.", {
      data: { values: rows },
      mark: { type: "line", point: true, tooltip: true },
      encoding: { x, y: { field: "us", type: "quantitative", title: "time (us)", scale: { type: "log" } }, color },
    });
  }

  // ---- dispatch ----
  const command = doc.command || "run";
  provenance(doc.provenance);
  try {
    if (command === "run") runFigures(doc);
    else if (command === "sweep") sweepFigures(doc);
    else if (command === "compare") compareFigures(doc);
    else if (command === "compare-policies") policyFigures(doc);
    else if (command === "train") trainFigures(doc);
    else if (command === "search") searchFigures(doc);
    else if (command === "plan") planFigures(doc);
    else if (command === "collective") collectiveFigures(doc);
    else paragraph(`No figures for "${command}".`, "error");
  } catch (error) {
    paragraph("The report failed: " + error, "error");
    console.error(error);
  }
  Promise.all(pending).then(() => {
    document.body.dataset.rendered = String(pending.length);
  });
})();
