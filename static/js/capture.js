// rdmalab packet view: when a run emits a "capture" event (sandbox/capture),
// experiment.js fires "rdmalab:capture" with a box to draw in; this file
// fetches the decoded packets (GET /api/runs/{id}/capture) and draws a small
// Wireshark: a packet list, the header fields of the selected packet, and
// the frame in hex with the selected field's bytes highlighted. Rows and
// fields are keyboard accessible (Tab, arrow keys, Enter/Space). The .pcap
// link downloads the stored capture for Wireshark or tshark.
(function () {
  "use strict";
  if (window.rdmalabCapture) return;
  window.rdmalabCapture = true;

  var T = {
    en: {
      title: "Captured RoCEv2 packets", heading: "Captured RoCEv2 packets (%n, on %i)", download: "Download .pcap", loading: "Decoding the capture…",
      failed: "Could not load the capture: ", dropped: "more packets were seen but not kept (the capture is bounded)",
      no: "No.", time: "Time (ms)", dir: "From → to", qp: "Dest QP", op: "Opcode", psn: "PSN", ackreq: "AckReq",
      len: "Payload", info: "AETH / info", fields: "Header fields", hex: "Bytes (hex)",
      pick: "Select a packet to see its headers.", fieldHint: "Select a field to highlight its bytes.",
      icrcOK: "ICRC correct", icrcBad: "ICRC wrong",
      icrcRight: " (correct)", icrcWrong: " (wrong: expected %s)", at: " (%n B at byte %o)",
      truncated: "truncated: %c of %l B", truncatedWhy: "only the first %c of the packet's %l bytes were captured (the capture's snap length): the payload is cut and the ICRC was not captured, so it is not checked",
      list: "Packet list: arrow keys move, Enter selects",
      why: "Soft-RoCE (rxe) is software: its RoCEv2 packets are UDP datagrams (port 4791) that pass through the guest's kernel, where the lab captured them. On a hardware RNIC the host kernel never sees them: use the NIC's sniffer, ibdump, or a mirror port."
    },
    zh: {
      title: "抓到的 RoCEv2 报文", heading: "抓到的 RoCEv2 报文（%n 个，接口 %i）", download: "下载 .pcap", loading: "正在解码抓包…",
      failed: "无法加载抓包：", dropped: "个报文被看到但没有保存（抓包有上限）",
      no: "序号", time: "时间（ms）", dir: "源 → 目的", qp: "目的 QP", op: "操作码", psn: "PSN", ackreq: "AckReq",
      len: "载荷", info: "AETH / 说明", fields: "报头字段", hex: "字节（十六进制）",
      pick: "选择一个报文查看其报头。", fieldHint: "选择一个字段以高亮它的字节。",
      icrcOK: "ICRC 正确", icrcBad: "ICRC 错误",
      icrcRight: "（正确）", icrcWrong: "（错误：应为 %s）", at: "（%n B，位于第 %o 字节）",
      truncated: "截断：抓到 %l B 中的 %c B", truncatedWhy: "这个报文共 %l 字节，只抓到了前 %c 字节（抓包的截取长度）：载荷不完整，ICRC 没有抓到，因此不做校验",
      list: "报文列表：方向键移动，回车选择",
      why: "Soft-RoCE（rxe）是软件：它的 RoCEv2 报文是经过虚拟机内核的 UDP 数据报（端口 4791），所以实验室能抓到。在硬件 RNIC 上，主机内核根本看不到这些报文：需要网卡自带的抓包功能、ibdump 或交换机镜像端口。"
    }
  };

  function h(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  // fmtBytesAt fills "(%n B at %o)": a field's length and offset.
  function fmtBytesAt(s, f) { return s.replace("%n", String(f.len)).replace("%o", String(f.off)); }

  // end is one end of "who → whom", whole on its line: the device, then
  // its role ("rxe0 (client)", "rxe0（客户端）") in a span a phone hides.
  function end(name, arrow) {
    var e = h("span", { "class": "cap-end" }, arrow);
    var m = /^(.*?)\s*([（(].*)$/.exec(name);
    if (!m) { e.appendChild(document.createTextNode(name)); return e; }
    e.appendChild(document.createTextNode(m[1]));
    e.appendChild(h("span", { "class": "cap-role" }, " " + m[2]));
    return e;
  }

  // cut fills "%c of %l": the bytes captured and the packet's length.
  function cut(s, p) { return s.replace("%c", String(p.caplen)).replace("%l", String(p.len)); }

  function View(box, run, lang) {
    this.box = box;
    this.run = run;
    this.t = T[lang] || T.en;
    this.zh = lang === "zh";
    this.sel = -1;
  }

  View.prototype.load = function () {
    var v = this;
    this.box.textContent = "";
    this.box.appendChild(h("p", { "class": "cap-loading" }, this.t.loading));
    fetch("/api/runs/" + encodeURIComponent(this.run) + "/capture?lang=" + (this.zh ? "zh" : "en"), { credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, b: b }; }); })
      .then(function (res) {
        if (!res.ok) throw new Error(res.b.error ? res.b.error.message : "HTTP error");
        v.draw(res.b);
      })
      .catch(function (e) {
        v.box.textContent = "";
        v.box.appendChild(h("p", { "class": "cap-error" }, v.t.failed + e.message));
      });
  };

  View.prototype.draw = function (c) {
    var t = this.t, v = this;
    this.c = c;
    this.box.textContent = "";
    var head = h("div", { "class": "cap-head" });
    head.appendChild(h("strong", null, t.heading.replace("%n", String(c.count)).replace("%i", c.iface)));
    var dl = h("a", { href: c.pcap, download: "", "class": "button cap-download", "data-testid": "capture-download" }, t.download);
    head.appendChild(dl);
    this.box.appendChild(head);
    this.box.appendChild(h("p", { "class": "cap-why" }, t.why));
    if (c.dropped) this.box.appendChild(h("p", { "class": "cap-dropped" }, c.dropped + " " + t.dropped));

    var wrap = h("div", { "class": "cap-list-wrap" });
    var table = h("table", { "class": "cap-list", role: "grid", "data-testid": "capture-list", "aria-label": t.list });
    var thead = h("thead"), tr = h("tr");
    // The columns a narrow widget hides (capture.css's container query):
    // the selected packet's fields show them all.
    var cls = ["cap-no", "cap-time cap-opt1", "cap-dir", "cap-qp cap-opt", "cap-op", "cap-psn cap-opt2", "cap-ack cap-opt", "cap-len cap-opt1", "cap-info"];
    [t.no, t.time, t.dir, t.qp, t.op, t.psn, t.ackreq, t.len, t.info].forEach(function (x, j) { tr.appendChild(h("th", { scope: "col", "class": cls[j] }, x)); });
    thead.appendChild(tr);
    table.appendChild(thead);
    var tbody = h("tbody");
    this.rows = [];
    (c.packets || []).forEach(function (p, i) {
      var row = h("tr", { tabindex: i === 0 ? "0" : "-1", "aria-selected": "false", "data-packet": String(p.no),
        "class": (p.nak ? "cap-nak " : "") + (p.error ? "cap-bad" : "") });
      // each end whole on its line: "rxe1 (NVMe host)" / "→ rxe0 (NVMe target)"
      var dir = h("span", { "class": "cap-ends" });
      dir.appendChild(end(p.src_name || p.src, ""));
      dir.appendChild(document.createTextNode(" "));
      dir.appendChild(end(p.dst_name || p.dst, "→ "));
      var info = (v.zh && p.syndrome_zh) || p.syndrome || "";
      if (p.error) info = (info ? info + (v.zh ? "；" : "; ") : "") + p.error;
      if (p.truncated) info = (info ? info + (v.zh ? "；" : "; ") : "") + cut(t.truncated, p);
      [String(p.no), (p.time * 1000).toFixed(3), dir, "0x" + ("000000" + p.dest_qp.toString(16)).slice(-6),
        p.op || "?", String(p.psn), p.ackreq ? "1" : "", String(p.payload_len), info]
        .forEach(function (x, j) {
          var td = h("td", { "class": cls[j] }, typeof x === "string" ? x : null);
          if (typeof x !== "string") td.appendChild(x);
          row.appendChild(td);
        });
      row.addEventListener("click", function () { v.select(i, true); });
      row.addEventListener("keydown", function (e) { v.rowKey(e, i); });
      tbody.appendChild(row);
      v.rows.push(row);
    });
    table.appendChild(tbody);
    wrap.appendChild(table);
    this.box.appendChild(wrap);

    var detail = h("div", { "class": "cap-detail" });
    this.fieldsBox = h("div", { "class": "cap-fields", "data-testid": "capture-fields", "aria-label": t.fields });
    this.fieldsBox.appendChild(h("p", null, t.pick));
    this.hexBox = h("pre", { "class": "cap-hex", "data-testid": "capture-hex", "aria-label": t.hex });
    detail.appendChild(this.fieldsBox);
    detail.appendChild(this.hexBox);
    this.box.appendChild(detail);
  };

  View.prototype.rowKey = function (e, i) {
    var n = this.rows.length, to = -1;
    if (e.key === "ArrowDown") to = Math.min(n - 1, i + 1);
    else if (e.key === "ArrowUp") to = Math.max(0, i - 1);
    else if (e.key === "Home") to = 0;
    else if (e.key === "End") to = n - 1;
    else if (e.key === "Enter" || e.key === " ") { e.preventDefault(); this.select(i, false); return; }
    if (to < 0) return;
    e.preventDefault();
    this.select(to, false);
    this.rows[to].focus();
  };

  View.prototype.select = function (i, focus) {
    var v = this, t = this.t, p = this.c.packets[i];
    this.rows.forEach(function (r, j) {
      r.setAttribute("aria-selected", j === i ? "true" : "false");
      r.tabIndex = j === i ? 0 : -1;
    });
    if (focus) this.rows[i].focus();
    this.sel = i;
    // hex: one span per byte, 16 per line with the offset in front
    var bytes = p.hex.match(/../g) || [];
    this.hexBox.textContent = "";
    this.spans = [];
    for (var off = 0; off < bytes.length; off += 16) {
      this.hexBox.appendChild(h("span", { "class": "cap-off" }, ("000" + off.toString(16)).slice(-4) + "  "));
      for (var k = off; k < Math.min(off + 16, bytes.length); k++) {
        var s = h("span", { "class": "cap-byte", "data-i": String(k) }, bytes[k]);
        this.spans.push(s);
        this.hexBox.appendChild(s);
        this.hexBox.appendChild(document.createTextNode(k % 16 === 7 ? "  " : " "));
      }
      this.hexBox.appendChild(document.createTextNode("\n"));
    }
    // fields grouped by header, each a button
    this.fieldsBox.textContent = "";
    var title = (v.zh && p.summary_zh) || p.summary;
    if (p.truncated) title += " · " + cut(t.truncated, p);
    else if (p.icrc_ok === true) title += " · " + t.icrcOK;
    else if (p.icrc_ok === false) title += " · " + t.icrcBad;
    this.fieldsBox.appendChild(h("p", { "class": "cap-summary", "data-testid": "capture-summary" }, "#" + p.no + " " + title));
    if (p.truncated) this.fieldsBox.appendChild(h("p", { "class": "cap-hint", "data-testid": "capture-truncated" }, cut(t.truncatedWhy, p)));
    this.fieldsBox.appendChild(h("p", { "class": "cap-hint" }, t.fieldHint));
    var groups = [], byName = {};
    (p.fields || []).forEach(function (f) {
      if (!byName[f.header]) { byName[f.header] = []; groups.push(f.header); }
      byName[f.header].push(f);
    });
    groups.forEach(function (g) {
      // Ethernet, IP and UDP start folded (Wireshark's habit): the lesson is about the InfiniBand headers.
      var folded = g === "Ethernet" || g === "IPv4" || g === "IPv6" || g === "UDP";
      var d = h("details", { open: folded ? null : "", "class": "cap-group", "data-header": g });
      d.appendChild(h("summary", null, g));
      var ul = h("ul");
      byName[g].forEach(function (f) {
        var li = h("li");
        var text = (v.zh && f.text_zh) || f.text;
        // the ICRC's verdict in the page's language (the server sends icrc_ok)
        if (f.header === "ICRC" && p.icrc_ok === true) text += t.icrcRight;
        if (f.header === "ICRC" && p.icrc_ok === false) text += t.icrcWrong.replace("%s", p.icrc_expected || "?");
        var sep = v.zh ? "：" : ": ";
        var b = h("button", { type: "button", "class": "cap-field", "data-field": g + "." + f.name,
          "aria-label": f.name + sep + text + fmtBytesAt(t.at, f) });
        // the spec's field names, as tshark prints them: English on every page
        b.appendChild(h("span", { "class": "cap-fname", lang: "en" }, f.name));
        b.appendChild(document.createTextNode(sep));
        b.appendChild(h("span", { "class": "cap-fval" }, text));
        var mark = function () { v.mark(f, b); };
        b.addEventListener("click", mark);
        b.addEventListener("focus", mark);
        li.appendChild(b);
        ul.appendChild(li);
      });
      d.appendChild(ul);
      v.fieldsBox.appendChild(d);
    });
  };

  View.prototype.mark = function (f, b) {
    this.fieldsBox.querySelectorAll(".cap-field.on").forEach(function (x) { x.classList.remove("on"); });
    b.classList.add("on");
    var first = null;
    this.spans.forEach(function (s, i) {
      var on = i >= f.off && i < f.off + f.len;
      s.classList.toggle("hl", on);
      if (on && !first) first = s;
    });
    if (first && first.scrollIntoView) first.scrollIntoView({ block: "nearest" });
  };

  document.addEventListener("rdmalab:capture", function (e) {
    var d = e.detail || {};
    if (!d.box || !d.run) return;
    new View(d.box, d.run, d.lang).load();
  });
})();
