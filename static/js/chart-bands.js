// chart-bands.js makes the experiment charts readable: experiment.js hands
// each uPlot's options to window.rdmalabChart before drawing, and this file
// names the axes with what they measure and their units, gives series
// readable legend labels, and, where the lesson has hardware reference
// figures, draws them as shaded bands behind the measured line (with the
// same figures as text under the chart, for readers who cannot see it).
//
// Reference figures are the lesson's: one-way latency 1–3 µs for RDMA (IB
// or RoCE on real NICs) and about 10–25 µs for kernel TCP in a data centre
// (20–50 µs round trip, what ping-pong benchmarks such as netperf TCP_RR
// report); a ping-pong measures round trips, so the bands are round trips.
// Soft-RoCE is software: its round trips land far above the RDMA band,
// which is exactly what the learner should see.
(function () {
  "use strict";
  if (window.rdmalabChart) return;

  var T = {
    en: {
      time: "time (s)", roundtrip: "round trip (#)",
      "Gbps": "throughput (Gbps)", "%": "CPU (% of one core)", "µs": "time (µs)", "µs|log": "round trip (µs, log scale)",
      "ms": "CPU time (ms)", "switches": "context switches", "packets": "packets received",
      rtt: "round trip, %s messages", ref: "Shaded: hardware reference figures",
      size: "message size (bytes, log scale)", rtt_median_us: "median round trip", rtt_p90_us: "90th percentile",
      loss: "packet loss on the link (%)", "MB/s": "goodput (MB/s, measured here)",
      "% of 0%": "goodput (% of its own loss-free goodput)", "packets sent": "packets sent (all dropped)", "sent_pkts": "packets sent (all dropped)",
      "% resent": "packets resent (% of what the data needed)",
      depth: "work requests in flight (queue depth, log scale)", round: "measurement round (#)",
      "k msg/s": "messages per second (thousands)",
      // y titles by experiment: what is plotted, on a linear scale
      "perf-sweep|µs": "post→completion (µs, median)", "perf-inline|µs": "post→completion (µs, median)",
      "perf-wait|µs": "round trip (µs, medians)", "perf-mr-cost|µs": "time per call (µs)",
      "perf-sweep|MB/s": "bandwidth (MB/s, measured here)", "perf-depth|MB/s": "bandwidth (MB/s, measured here)", "perf-mtu|MB/s": "bandwidth (MB/s, measured here)",
      incr: "increments done by both QPs (#)", lost: "lost updates (#)",
      msgs: "messages received (#)", recv: "receives left in the SRQ", members: "group members that received it",
    },
    zh: {
      time: "时间（秒）", roundtrip: "第几次往返",
      "Gbps": "吞吐（Gbps）", "%": "CPU（占一个核的百分比）", "µs": "时间（µs）", "µs|log": "往返时间（µs，对数刻度）",
      "ms": "CPU 时间（毫秒）", "switches": "上下文切换次数", "packets": "收到的包数",
      rtt: "往返，%s 消息", ref: "阴影：硬件参考数据",
      size: "消息大小（字节，对数刻度）", rtt_median_us: "往返中位数", rtt_p90_us: "第 90 百分位",
      loss: "链路丢包率（%）", "MB/s": "有效吞吐（MB/s，本实验室实测）",
      "% of 0%": "有效吞吐（占自身无丢包时的 %）", "packets sent": "已发送的报文（全部被丢弃）", "sent_pkts": "已发送的报文（全部被丢弃）",
      "% resent": "重发的报文（占数据所需报文的 %）",
      depth: "在途工作请求数（队列深度，对数刻度）", round: "第几轮测量",
      "k msg/s": "每秒消息数（千）",
      "perf-sweep|µs": "投递→完成（µs，中位数）", "perf-inline|µs": "投递→完成（µs，中位数）",
      "perf-wait|µs": "往返时间（µs，中位数）", "perf-mr-cost|µs": "每次调用耗时（µs）",
      "perf-sweep|MB/s": "带宽（MB/s，本实验室实测）", "perf-depth|MB/s": "带宽（MB/s，本实验室实测）", "perf-mtu|MB/s": "带宽（MB/s，本实验室实测）",
      incr: "两个 QP 合计完成的加一次数", lost: "丢失的更新（次）",
      msgs: "已收到的消息数", recv: "SRQ 中剩余的接收缓冲", members: "收到数据报的组成员数",
    },
  };

  // Bands by experiment and unit. lo/hi in the chart's unit.
  var BANDS = {
    "pingpong|µs": [
      { lo: 2, hi: 6, color: "--diagram-rdma", fallback: "#1f7a4d",
        en: "RDMA NIC (InfiniBand or RoCE): 2–6 µs round trip (1–3 µs one way)",
        zh: "RDMA 硬件网卡（InfiniBand 或 RoCE）：往返 2–6 µs（单程 1–3 µs）",
        short: { en: "RDMA NIC", zh: "RDMA 网卡" } },
      { lo: 20, hi: 50, color: "--diagram-removed", fallback: "#d1343b",
        en: "kernel TCP in a data centre: 20–50 µs round trip (about 10–25 µs one way)",
        zh: "数据中心里的内核 TCP：往返 20–50 µs（单程约 10–25 µs）",
        short: { en: "kernel TCP", zh: "内核 TCP" } },
    ],
  };

  // The x axis of each experiment's series: pingpong plots latency by
  // message size (one point per size, on a log2 axis); runs recorded
  // before that plotted round trip numbers (series rtt_us_<size>).
  var XAXIS = { "pingpong": "size", "loss-sweep": "loss",
    // lesson 05: by message size, by queue depth, by round or round trip
    "perf-sweep": "size", "perf-inline": "size", "perf-mr-cost": "size",
    "perf-depth": "depth", "perf-signal": "round", "perf-postlist": "round", "perf-wait": "roundtrip",
    // lesson 07: by increments done, by messages received, by send round
    "atomics": "incr", "srq": "msgs", "multicast": "round" };

  // bytes is a size as the lessons write it: 64 B, 4 KiB, 16 MiB.
  function bytes(v) {
    if (v == null) return "";
    var units = ["B", "KiB", "MiB", "GiB"], i = 0;
    while (v >= 1024 && i < units.length - 1 && v % 1024 === 0) { v /= 1024; i++; }
    return v + " " + units[i];
  }

  function cssColor(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  function bandsPlugin(bands, lang, t) {
    return {
      hooks: {
        // The text version goes under the chart (moved there again when a
        // new series makes experiment.js rebuild the plot).
        ready: function (u) {
          caption(u.root.parentNode, bands, lang, t);
        },
        // Under the series: drawClear runs after the canvas is cleared.
        drawClear: function (u) {
          var ctx = u.ctx, dpr = window.devicePixelRatio || 1;
          var top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
          var drawn = 0;
          ctx.save();
          bands.forEach(function (b) {
            var y1 = u.valToPos(b.hi, "y", true), y2 = u.valToPos(b.lo, "y", true);
            var a = Math.max(Math.min(y1, y2), top), z = Math.min(Math.max(y1, y2), bottom);
            if (!(z > a)) return;
            var c = cssColor(b.color, b.fallback);
            ctx.globalAlpha = 0.16;
            ctx.fillStyle = c;
            ctx.fillRect(u.bbox.left, a, u.bbox.width, z - a);
            ctx.globalAlpha = 1;
            ctx.font = Math.round(11 * dpr) + "px system-ui, sans-serif";
            ctx.textBaseline = "top";
            ctx.fillStyle = c;
            ctx.fillText(b.short[lang] || b.short.en, u.bbox.left + 6 * dpr, a + 2 * dpr);
            drawn++;
          });
          ctx.restore();
          u.rdmalabBandsDrawn = drawn;
        },
      },
    };
  }

  // caption writes the bands as text under the chart.
  function caption(box, bands, lang, t) {
    if (!box) return;
    var old = box.querySelector(".chart-ref");
    if (old) { box.appendChild(old); return; }
    var p = document.createElement("div");
    p.className = "chart-ref";
    p.dataset.testid = "chart-ref";
    p.appendChild(document.createTextNode(t.ref));
    var ul = document.createElement("ul");
    bands.forEach(function (b) {
      var li = document.createElement("li");
      var sw = document.createElement("span");
      sw.className = "sw";
      sw.style.background = cssColor(b.color, b.fallback);
      sw.setAttribute("aria-hidden", "true");
      li.appendChild(sw);
      li.appendChild(document.createTextNode(b[lang] || b.en));
      ul.appendChild(li);
    });
    p.appendChild(ul);
    box.appendChild(p);
  }

  // rdmalabChart(opts, info) adjusts uPlot options before the chart is made.
  // info: {experiment, unit, series: [names], lang}.
  window.rdmalabChart = function (opts, info) {
    var lang = info.lang === "zh" ? "zh" : "en";
    var t = T[lang];
    var axes = opts.axes || [{}, {}];
    var xName = XAXIS[info.experiment] || "time";
    if (xName === "size" && info.series.some(function (n) { return /^rtt_us_/.test(n); })) xName = "roundtrip";
    axes[0] = Object.assign({}, axes[0], { label: t[xName] });
    if (xName === "size" || xName === "depth") {
      opts.scales = opts.scales || {};
      opts.scales.x = { time: false, distr: 3, log: 2 };
    }
    if (xName === "size") {
      // sizes in readable units (64 B, 4 KiB, 16 MiB): raw bytes were
      // clipped ("16,777,21") under the axis
      axes[0].values = function (u, vals) { return vals.map(bytes); };
    }
    var bands = BANDS[info.experiment + "|" + info.unit];
    // the y title says what is plotted and on which scale: "log" only
    // where the scale is logarithmic (the reference bands' charts)
    var yTitle = t[info.experiment + "|" + info.unit] || (bands && t[info.unit + "|log"]) || t[info.unit] || info.unit;
    axes[1] = Object.assign({}, axes[1], { label: yTitle });
    opts.axes = axes;

    // Readable legend labels for series named by the experiment's code.
    (opts.series || []).forEach(function (s, i) {
      if (i === 0) { s.label = axes[0].label; return; }
      var name = info.series[i - 1] || "";
      var m = /^rtt_us_(.+)$/.exec(name);
      if (m) s.label = t.rtt.replace("%s", m[1]);
      else if (t[name]) s.label = t[name];
    });

    if (bands) {
      var lo = Math.min.apply(null, bands.map(function (b) { return b.lo; }));
      var hi = Math.max.apply(null, bands.map(function (b) { return b.hi; }));
      opts.scales = opts.scales || {};
      // Log scale, always wide enough to show both bands and the data.
      opts.scales.y = {
        distr: 3,
        range: function (u, min, max) {
          var a = Math.min(isFinite(min) && min > 0 ? min : lo, lo * 0.8);
          var z = Math.max(isFinite(max) ? max : hi, hi * 1.25);
          return window.uPlot.rangeLog(a, z, 10, true);
        },
      };
      opts.plugins = (opts.plugins || []).concat(bandsPlugin(bands, lang, t));
    }
    return opts;
  };
})();
