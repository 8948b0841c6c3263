// dsctl view: the grid of DaemonSets x nodes, drawn on one canvas and kept current from the
// server's event stream. Plain JavaScript, no dependencies, nothing loaded from elsewhere.
//
// Protocol (ADR 0127): open /api/events; on "hello" fetch /api/snapshot; apply each "delta"
// whose seq is newer than the snapshot's (a delta carries absolute cell codes, so one already
// contained in the snapshot is harmless); on "layout" fetch a new snapshot. Cells are one
// small integer each, decoded with the snapshot's codec. A change repaints only its cells.
'use strict';
(() => {
  const COLORS = {
    NOT_WANTED: '#eceff1', MISSING: '#e53935', PENDING: '#fbc02d',
    NOT_READY_NEW: '#aed581', NOT_READY_OLD: '#90caf9', READY_NEW: '#2e7d32', READY_OLD: '#1565c0',
    TERMINATING: '#9e9e9e', FAILED: '#880e4f',
    HELD_PARTITION: '#6d4c41', HELD_SELECTOR: '#8e24aa', HELD_PAUSED: '#ef6c00', HELD_UNHEALTHY: '#37474f',
  };
  const LEGEND = [
    ['READY_NEW', 'Ready, new revision'], ['NOT_READY_NEW', 'not Ready, new'], ['PENDING', 'Pending'],
    ['READY_OLD', 'Ready, old revision'], ['NOT_READY_OLD', 'not Ready, old'], ['MISSING', 'missing'],
    ['TERMINATING', 'terminating'], ['FAILED', 'failed'],
    ['HELD_PAUSED', 'held: paused'], ['HELD_PARTITION', 'held: partition'], ['HELD_SELECTOR', 'held: selector'],
    ['HELD_UNHEALTHY', 'skipped: unhealthy'], ['NOT_WANTED', 'not wanted'],
  ];
  const COLOR_KEYS = LEGEND.map(([k]) => k);
  const PALETTE = COLOR_KEYS.map((k) => COLORS[k]);
  const GATE_MARK = '#5e35b1';
  const SKIPPED_TEXT = '#b26a00';
  // The readiness-gate mark: a thin bar on a gated node, a thick one where the gate waits for this agent.
  function gateMark(gate) { return gate >= 2 ? 4 : 2; }
  const PAD = 12;
  const HEADER = 42;
  const ZONE_LABEL = 16;
  const BLOCK_GAP = 10;
  const MAX_CANVAS = 30000;

  const $ = (id) => document.getElementById(id);
  const canvas = $('grid');
  const ctx = canvas.getContext('2d', { alpha: false });

  // --- model ---------------------------------------------------------------------------------
  const view = {
    snap: null, seq: -1, layout: -1, cells: [], codec: null, colorOf: null, counts: null,
    byZone: false, showPlan: false, geo: null, dirty: new Set(), dirtyHeaders: new Set(), fullDraw: false,
    loading: false, reloadAgain: false, buffered: [], frameRequested: false,
    stats: { snapshots: 0, deltas: 0, cellsApplied: 0, applyMs: 0, drawMs: 0, lastSnapshotBytes: 0,
             firstPaintMs: null, lastFullDrawMs: 0 },
  };

  function field(code, name) {
    const f = view.codec[name];
    return (code >> f.shift) & ((1 << f.bits) - 1);
  }

  // A lookup table from cell code to colour index, built from the codec the server sent.
  function buildColorTable(codec) {
    const size = 1 << (codec.gated.shift + codec.gated.bits);
    const table = new Uint8Array(size);
    const S = codec.state.names, R = codec.revision.names, H = codec.hold.names;
    for (let code = 0; code < size; code++) {
      const state = S[field(code, 'state')], rev = R[field(code, 'revision')], hold = H[field(code, 'hold')];
      let key;
      if (hold && hold !== 'NONE') key = 'HELD_' + hold;
      else if (state === 'READY' || state === 'NOT_READY') key = state + (rev === 'OLD' ? '_OLD' : '_NEW');
      else key = state;
      const index = COLOR_KEYS.indexOf(key);
      table[code] = index < 0 ? COLOR_KEYS.indexOf('NOT_WANTED') : index;
    }
    return table;
  }

  function decode(code) {
    const c = view.codec;
    return {
      state: c.state.names[field(code, 'state')], revision: c.revision.names[field(code, 'revision')],
      hold: c.hold.names[field(code, 'hold')], gated: field(code, 'gated') !== 0,
      waiting: c.gated.names[field(code, 'gated')] === 'WAITING',
    };
  }

  function applySnapshot(snap) {
    view.snap = snap;
    view.seq = snap.seq;
    view.layout = snap.layout;
    view.codec = snap.codec;
    view.colorOf = buildColorTable(snap.codec);
    view.cells = snap.cells.map((row) => Uint16Array.from(row));
    view.counts = new Uint32Array(PALETTE.length);
    for (const row of view.cells) for (const code of row) view.counts[view.colorOf[code]]++;
    $('planToggle').hidden = !snap.plan;
    view.showPlan = !!snap.plan && $('showPlan').checked;
    showLegends();
    view.stats.snapshots++;
    relayout();
  }

  function applyDelta(d) {
    const t0 = performance.now();
    const cells = d.cells;
    for (let i = 0; i < cells.length; i += 3) {
      const ds = cells[i], node = cells[i + 1], code = cells[i + 2];
      const row = view.cells[ds];
      if (!row || node >= row.length) continue;
      view.counts[view.colorOf[row[node]]]--;
      view.counts[view.colorOf[code]]++;
      row[node] = code;
      view.dirty.add(ds * 1048576 + node);
    }
    for (const [ds, header] of d.headers) {
      if (view.snap.daemonsets[ds]) {
        view.snap.daemonsets[ds].header = header;
        view.dirtyHeaders.add(ds);
      }
    }
    view.seq = d.seq;
    view.stats.deltas++;
    view.stats.cellsApplied += cells.length / 3;
    view.stats.applyMs += performance.now() - t0;
    requestFrame();
  }

  // --- connection ------------------------------------------------------------------------------
  function setStatus(text, kind) {
    const el = $('status');
    el.textContent = text;
    el.className = 'status' + (kind ? ' ' + kind : '');
  }

  async function loadSnapshot() {
    if (view.loading) { view.reloadAgain = true; return; }
    view.loading = true;
    view.buffered = [];
    try {
      do {
        view.reloadAgain = false;
        const response = await fetch('/api/snapshot', { cache: 'no-store' });
        if (!response.ok) throw new Error('snapshot: HTTP ' + response.status);
        const text = await response.text();
        view.stats.lastSnapshotBytes = text.length;
        const snap = JSON.parse(text);
        if (snap.version !== 1) throw new Error('this page does not understand snapshot version ' + snap.version);
        applySnapshot(snap);
        const waiting = view.buffered;
        view.buffered = [];
        for (const d of waiting) {
          if (d.layout === view.layout && d.seq > view.seq) applyDelta(d);
          else if (d.layout !== view.layout && d.seq > view.seq) view.reloadAgain = true;
        }
      } while (view.reloadAgain);
      setStatus(view.snap.synced ? 'live' : 'syncing…', view.snap.synced ? 'live' : '');
    } catch (err) {
      setStatus(String(err.message || err), 'bad');
    } finally {
      view.loading = false;
    }
  }

  function connect() {
    const source = new EventSource('/api/events');
    source.addEventListener('hello', () => { loadSnapshot(); });
    source.addEventListener('layout', () => { loadSnapshot(); });
    source.addEventListener('delta', (e) => {
      const d = JSON.parse(e.data);
      if (view.loading) view.buffered.push(d);
      else if (d.layout !== view.layout) loadSnapshot();
      else if (d.seq > view.seq) applyDelta(d);
    });
    source.onerror = () => setStatus('reconnecting…', 'bad');
  }

  // --- geometry --------------------------------------------------------------------------------
  // Each DaemonSet is a block: a header (name, progress, conditions) and its cells, wrapped into
  // lines; per zone, one sub-block per zone. A node keeps its position within every block.
  function relayout() {
    const snap = view.snap;
    if (!snap) return;
    const n = snap.nodes.length;
    const zones = view.byZone ? snap.zones.length : 1;
    const zoneNodes = [];
    for (let z = 0; z < zones; z++) zoneNodes.push([]);
    const pos = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const z = view.byZone ? snap.nodeZone[i] : 0;
      pos[i] = zoneNodes[z].length;
      zoneNodes[z].push(i);
    }
    const width = Math.max(320, $('gridWrap').clientWidth - 2);
    let pitch = n <= 100 ? 16 : n <= 500 ? 11 : n <= 2000 ? 8 : 6;
    let blocks, height;
    for (;;) {
      const perLine = Math.max(1, Math.floor((width - 2 * PAD) / pitch));
      blocks = [];
      let y = PAD;
      snap.daemonsets.forEach((ds, d) => {
        const headerY = y;
        y += HEADER;
        for (let z = 0; z < zones; z++) {
          const count = zoneNodes[z].length;
          const labelY = y;
          if (view.byZone) y += ZONE_LABEL;
          const lines = Math.max(1, Math.ceil(count / perLine));
          blocks.push({ ds: d, zone: z, nodes: zoneNodes[z], y0: y, labelY, headerY, perLine, lines,
                        end: y + lines * pitch });
          y += lines * pitch + 4;
        }
        y += BLOCK_GAP;
      });
      height = Math.max(y + PAD, 60);
      if (height <= MAX_CANVAS || pitch <= 2) break;
      pitch -= 1;
    }
    const size = pitch >= 6 ? pitch - 1 : pitch;
    view.geo = { width, height, pitch, size, blocks, zones, pos, headerOf: [] };
    blocks.forEach((b, i) => { if (b.zone === 0) view.geo.headerOf[b.ds] = i; });
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    view.fullDraw = true;
    requestFrame();
  }

  function cellXY(block, k) {
    const g = view.geo;
    return [PAD + (k % block.perLine) * g.pitch, block.y0 + Math.floor(k / block.perLine) * g.pitch];
  }

  function blockOf(ds, node) {
    const g = view.geo;
    const z = view.byZone ? view.snap.nodeZone[node] : 0;
    return g.blocks[ds * g.zones + z];
  }

  // --- drawing ---------------------------------------------------------------------------------
  function requestFrame() {
    if (view.frameRequested) return;
    view.frameRequested = true;
    requestAnimationFrame(frame);
  }

  function frame() {
    view.frameRequested = false;
    if (!view.geo) return;
    const t0 = performance.now();
    if (view.fullDraw) {
      drawAll();
      view.fullDraw = false;
      view.dirty.clear();
      view.dirtyHeaders.clear();
      view.stats.lastFullDrawMs = performance.now() - t0;
      if (view.stats.firstPaintMs === null) view.stats.firstPaintMs = performance.now();
    } else {
      for (const d of view.dirtyHeaders) drawHeader(d);
      view.dirtyHeaders.clear();
      drawDirty();
    }
    view.stats.drawMs += performance.now() - t0;
    updateLegend();
    exposeAttributes();
  }

  function colorIndexAt(ds, node) {
    return view.colorOf[view.cells[ds][node]];
  }

  function waveColor(wave, maxWave) {
    if (!wave) return COLORS.NOT_WANTED;
    const t = maxWave > 1 ? (wave - 1) / (maxWave - 1) : 0;
    return 'hsl(190, 70%, ' + Math.round(25 + 50 * t) + '%)';
  }

  function planColor(ds, node) {
    const plan = view.snap.plan;
    const waves = plan.waves[ds];
    return waveColor(waves ? waves[node] : 0, plan.maxWave);
  }

  // The plan's legend: a few waves from first to last, and the unplanned colour.
  function showLegends() {
    const plan = view.snap && view.snap.plan;
    const ul = $('planLegend');
    $('legend').hidden = view.showPlan;
    ul.hidden = !view.showPlan;
    if (!plan || !view.showPlan) return;
    const items = [];
    const steps = Math.min(plan.maxWave, 8);
    for (let s = 0; s < steps; s++) {
      const wave = steps === 1 ? 1 : Math.round(1 + s * (plan.maxWave - 1) / (steps - 1));
      items.push([waveColor(wave, plan.maxWave), 'wave ' + wave]);
    }
    items.push([COLORS.NOT_WANTED, 'not in the plan']);
    ul.replaceChildren(...items.map(([color, label]) => {
      const li = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = color;
      li.append(swatch, document.createTextNode(label));
      return li;
    }));
  }

  function drawAll() {
    const g = view.geo;
    ctx.fillStyle = '#fafafa';
    ctx.fillRect(0, 0, g.width, g.height);
    view.snap.daemonsets.forEach((_, d) => drawHeader(d));
    if (view.byZone) {
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillStyle = '#607d8b';
      for (const b of g.blocks) {
        const name = view.snap.zones[b.zone] || '(no zone)';
        ctx.fillText(name + ' · ' + b.nodes.length + ' nodes', PAD, b.labelY + 11);
      }
    }
    if (view.showPlan) {
      for (const b of g.blocks) {
        b.nodes.forEach((node, k) => {
          const [x, y] = cellXY(b, k);
          ctx.fillStyle = planColor(b.ds, node);
          ctx.fillRect(x, y, g.size, g.size);
        });
      }
      return;
    }
    // One pass per colour, so the fill style changes a dozen times, not once per cell.
    for (let c = 0; c < PALETTE.length; c++) {
      ctx.fillStyle = PALETTE[c];
      for (const b of g.blocks) {
        const row = view.cells[b.ds];
        const nodes = b.nodes;
        for (let k = 0; k < nodes.length; k++) {
          if (view.colorOf[row[nodes[k]]] !== c) continue;
          ctx.fillRect(PAD + (k % b.perLine) * g.pitch, b.y0 + Math.floor(k / b.perLine) * g.pitch, g.size, g.size);
        }
      }
    }
    if (g.size >= 7) {
      ctx.fillStyle = GATE_MARK;
      for (const b of g.blocks) {
        const row = view.cells[b.ds];
        b.nodes.forEach((node, k) => {
          const gate = field(row[node], 'gated');
          if (!gate) return;
          const [x, y] = cellXY(b, k);
          ctx.fillRect(x, y, g.size, gateMark(gate));
        });
      }
    }
  }

  function drawDirty() {
    const g = view.geo;
    let last = -1;
    for (const key of view.dirty) {
      const ds = Math.floor(key / 1048576), node = key % 1048576;
      const b = blockOf(ds, node);
      if (!b) continue;
      const [x, y] = cellXY(b, view.geo.pos[node]);
      if (view.showPlan) {
        continue; // the plan overlay does not change with the live state
      }
      const code = view.cells[ds][node];
      const c = view.colorOf[code];
      if (c !== last) { ctx.fillStyle = PALETTE[c]; last = c; }
      ctx.fillRect(x, y, g.size, g.size);
      if (g.size >= 7 && field(code, 'gated')) {
        ctx.fillStyle = GATE_MARK;
        ctx.fillRect(x, y, g.size, gateMark(field(code, 'gated')));
        last = -1;
      }
    }
    view.dirty.clear();
  }

  function drawHeader(d) {
    const g = view.geo;
    const b = g.blocks[g.headerOf[d]];
    if (!b) return;
    const ds = view.snap.daemonsets[d];
    const h = ds.header;
    const y = b.headerY;
    ctx.fillStyle = '#fafafa';
    ctx.fillRect(0, y, g.width, HEADER - 2);
    ctx.fillStyle = '#1f2328';
    ctx.font = '600 13px system-ui, sans-serif';
    ctx.fillText(ds.key, PAD, y + 14);
    let x = PAD + ctx.measureText(ds.key).width + 10;
    ctx.font = '12px system-ui, sans-serif';
    const tags = ['rev ' + (h.revision || '?'), h.strategy];
    if (h.paused) tags.push('paused');
    if (h.partition) tags.push('partition ' + h.partition);
    if (h.selector) tags.push('selector ' + h.selector);
    ctx.fillStyle = '#607d8b';
    ctx.fillText(tags.join(' · '), x, y + 14);
    x += ctx.measureText(tags.join(' · ')).width + 10;
    if (h.problems.length) {
      ctx.fillStyle = '#c62828';
      ctx.fillText('⚠ ' + h.problems.join('; '), x, y + 14);
    }
    // Progress: updated / desired (bar), available / desired (thin bar below).
    const bw = 220, by = y + 22;
    const desired = Math.max(h.desired, 1);
    ctx.fillStyle = '#e0e0e0';
    ctx.fillRect(PAD, by, bw, 8);
    ctx.fillStyle = COLORS.READY_NEW;
    ctx.fillRect(PAD, by, Math.min(1, h.updated / desired) * bw, 8);
    ctx.fillStyle = '#e0e0e0';
    ctx.fillRect(PAD, by + 10, bw, 3);
    ctx.fillStyle = '#00897b';
    ctx.fillRect(PAD, by + 10, Math.min(1, h.available / desired) * bw, 3);
    ctx.fillStyle = '#1f2328';
    const counts = 'updated ' + h.updated + '/' + h.desired + ' · available ' + h.available + '/' + h.desired +
      ' · ready ' + h.ready;
    ctx.fillText(counts, PAD + bw + 10, by + 9);
    x = PAD + bw + 20 + ctx.measureText(counts).width;
    for (const c of h.conditions) {
      const bad = (c.type === 'ReplicaFailure' && c.status === 'True') || (c.type === 'Progressing' && c.status === 'False');
      const skipped = c.type === 'RolloutSkippedNodes' && c.status === 'True';
      ctx.fillStyle = bad ? '#c62828' : skipped ? SKIPPED_TEXT : '#455a64';
      // RolloutSkippedNodes' message starts with the count of skipped nodes.
      const count = skipped && /^\d+ /.test(c.message) ? ': ' + c.message.split(' ')[0] + ' node(s)' : '';
      const text = c.type + '=' + c.status + (c.reason ? ' (' + c.reason + count + ')' : '');
      ctx.fillText(text, x, by + 9);
      x += ctx.measureText(text).width + 12;
    }
  }

  // --- legend, summary, test hooks -------------------------------------------------------------
  const legendCounts = [];
  function buildLegend() {
    const ul = $('legend');
    LEGEND.forEach(([key, label], i) => {
      const li = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = COLORS[key];
      const text = document.createElement('span');
      text.textContent = label;
      const count = document.createElement('span');
      count.className = 'count';
      li.append(swatch, text, count);
      li.dataset.state = key;
      ul.append(li);
      legendCounts[i] = count;
    });
  }

  function updateLegend() {
    if (!view.counts) return;
    for (let i = 0; i < legendCounts.length; i++) legendCounts[i].textContent = String(view.counts[i]);
    const snap = view.snap;
    $('summary').textContent = snap.daemonsets.length + ' DaemonSets × ' + snap.nodes.length + ' nodes · ' +
      snap.resource + (snap.plan ? ' · plan ' + snap.plan.source : '');
  }

  function exposeAttributes() {
    const snap = view.snap;
    canvas.dataset.daemonsets = String(snap.daemonsets.length);
    canvas.dataset.nodes = String(snap.nodes.length);
    canvas.dataset.cells = String(view.cells.reduce((n, row) => n + row.length, 0));
    canvas.dataset.seq = String(view.seq);
    canvas.dataset.layout = String(view.layout);
    canvas.dataset.synced = String(!!snap.synced);
  }

  // The page's state for tests and benchmarks: read-only copies, never the live arrays.
  window.dsctlView = {
    ready: () => !!view.snap && view.stats.firstPaintMs !== null && !view.loading,
    synced: () => !!view.snap && !!view.snap.synced,
    seq: () => view.seq,
    daemonsets: () => (view.snap ? view.snap.daemonsets.map((d) => d.key) : []),
    nodes: () => (view.snap ? view.snap.nodes.slice() : []),
    header: (key) => { const d = view.snap.daemonsets.find((x) => x.key === key); return d ? d.header : null; },
    cells: (key) => {
      const i = view.snap.daemonsets.findIndex((x) => x.key === key);
      return i < 0 ? null : Array.from(view.cells[i], decode);
    },
    counts: (key) => {
      const i = view.snap.daemonsets.findIndex((x) => x.key === key);
      const out = {};
      if (i < 0) return out;
      for (const code of view.cells[i]) {
        const c = decode(code);
        const name = c.hold !== 'NONE' ? 'HELD_' + c.hold : c.state + (c.revision === 'NONE' ? '' : '_' + c.revision);
        out[name] = (out[name] || 0) + 1;
      }
      return out;
    },
    cellCount: () => view.cells.reduce((n, row) => n + row.length, 0),
    pixelAt: (key, node) => {
      const d = view.snap.daemonsets.findIndex((x) => x.key === key);
      const n = view.snap.nodes.indexOf(node);
      if (d < 0 || n < 0) return null;
      const b = blockOf(d, n);
      const [x, y] = cellXY(b, view.geo.pos[n]);
      const ratio = window.devicePixelRatio || 1;
      const px = ctx.getImageData(Math.round((x + 1) * ratio), Math.round((y + 1) * ratio), 1, 1).data;
      return { rgb: [px[0], px[1], px[2]], expected: PALETTE[colorIndexAt(d, n)], x, y };
    },
    geometry: () => ({ width: view.geo.width, height: view.geo.height, pitch: view.geo.pitch,
                       canvasWidth: canvas.width, canvasHeight: canvas.height, blocks: view.geo.blocks.length }),
    stats: () => Object.assign({}, view.stats),
    clickCell: (key, node) => {
      const d = view.snap.daemonsets.findIndex((x) => x.key === key);
      const n = view.snap.nodes.indexOf(node);
      if (d >= 0 && n >= 0) showDetails(d, n);
    },
  };

  // --- interaction -----------------------------------------------------------------------------
  function hit(event) {
    const g = view.geo;
    if (!g) return null;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left, y = event.clientY - rect.top;
    for (const b of g.blocks) {
      if (y < b.y0 || y >= b.end) continue;
      const col = Math.floor((x - PAD) / g.pitch), line = Math.floor((y - b.y0) / g.pitch);
      if (col < 0 || col >= b.perLine) return null;
      const k = line * b.perLine + col;
      return k < b.nodes.length ? { ds: b.ds, node: b.nodes[k] } : null;
    }
    return null;
  }

  function describe(ds, node) {
    const c = decode(view.cells[ds][node]);
    const parts = [c.state.replace('_', ' ').toLowerCase()];
    if (c.revision !== 'NONE') parts.push(c.revision.toLowerCase() + ' revision');
    if (c.hold !== 'NONE') parts.push('held: ' + c.hold.toLowerCase());
    if (c.gated) parts.push(c.waiting ? 'node gated, waiting for this agent' : 'node gated');
    const plan = view.snap.plan;
    if (plan && plan.waves[ds] && plan.waves[ds][node]) parts.push('planned wave ' + plan.waves[ds][node]);
    return view.snap.nodes[node] + ' · ' + view.snap.daemonsets[ds].key + ': ' + parts.join(', ');
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function dl(pairs) {
    const list = el('dl');
    for (const [k, v] of pairs) list.append(el('dt', k), el('dd', v === undefined || v === null ? '' : v));
    return list;
  }

  async function showDetails(ds, node) {
    const key = view.snap.daemonsets[ds].key, nodeName = view.snap.nodes[node];
    const body = $('detailsBody');
    if ($('details').hidden) {
      $('details').hidden = false;
      relayout(); // the grid is narrower beside the panel
    }
    body.replaceChildren(el('h2', nodeName + ' · ' + key), el('p', 'loading…'));
    let d;
    try {
      const r = await fetch('/api/cell?ds=' + encodeURIComponent(key) + '&node=' + encodeURIComponent(nodeName));
      d = await r.json();
      if (!r.ok) throw new Error(d.error || ('HTTP ' + r.status));
    } catch (err) {
      body.replaceChildren(el('h2', nodeName + ' · ' + key), el('p', String(err.message || err), 'warn'));
      return;
    }
    const parts = [el('h2', nodeName + ' · ' + key)];
    parts.push(el('h3', 'cell'), dl([
      ['state', d.cell.state], ['revision', d.cell.revision + ' (current ' + d.daemonset.revision + ')'],
      ['held', d.cell.hold], ['node gated', !d.cell.gated ? 'no' : (d.cell.gate === 'WAITING' ? 'yes, waiting for this agent' : 'yes') +
        ' (' + d.readinessTaint + ')'],
      ['should run', d.wanted.shouldRun ? 'yes' : 'no'],
      ['may keep running', d.wanted.shouldContinueRunning ? 'yes' : 'no'],
      ['planned wave', d.plannedWave || '—'],
    ]));
    if (!d.pods.length) parts.push(el('h3', 'pod'), el('p', 'no pod of this DaemonSet on this node'));
    for (const p of d.pods) {
      parts.push(el('h3', 'pod'), dl([
        ['name', p.name], ['phase', p.phase + (p.terminating ? ' (terminating)' : '')],
        ['ready', p.ready ? 'yes' + (p.readySince ? ' since ' + p.readySince : '') : 'no'],
        ['revision', p.revision + (p.current ? ' (current)' : ' (old)')], ['node', p.node + (p.bound ? '' : ' (not bound yet)')],
        ['restarts', p.restarts], ['created', p.created],
      ]));
    }
    const n = d.node;
    parts.push(el('h3', 'node'), dl([
      ['Ready', (n.ready.status || 'Unknown') + (n.ready.reason ? ' (' + n.ready.reason + ')' : '')],
      ['since', n.ready.lastTransitionTime || ''], ['unschedulable', n.unschedulable ? 'yes' : 'no'],
    ]));
    const taints = el('div', null, 'kv');
    if (!n.taints.length) taints.textContent = 'no taints';
    for (const t of n.taints) taints.append(el('div', t.key + (t.value ? '=' + t.value : '') + ':' + t.effect));
    parts.push(el('h3', 'taints'), taints);
    const labels = el('div', null, 'kv');
    for (const [k, v] of Object.entries(n.labels)) labels.append(el('div', k + '=' + v));
    parts.push(el('h3', 'labels'), labels);
    parts.push(el('h3', 'events of the pod'));
    if (d.eventsError) parts.push(el('p', d.eventsError, 'warn'));
    if (!d.events.length) parts.push(el('p', d.pods.length ? 'no events' : '—'));
    else {
      const table = el('table');
      for (const e of d.events) {
        const tr = el('tr');
        tr.append(el('td', e.time || ''), el('td', e.type || '', e.type === 'Warning' ? 'warn' : ''),
                  el('td', e.reason || ''), el('td', (e.message || '') + (e.count > 1 ? ' (×' + e.count + ')' : '')));
        table.append(tr);
      }
      parts.push(table);
    }
    body.replaceChildren(...parts);
  }

  function init() {
    buildLegend();
    const params = new URLSearchParams(location.search);
    $('byZone').checked = params.get('group') === 'zone';
    view.byZone = $('byZone').checked;
    $('byZone').addEventListener('change', () => { view.byZone = $('byZone').checked; relayout(); });
    $('showPlan').checked = params.get('plan') === 'waves';
    $('showPlan').addEventListener('change', () => {
      view.showPlan = !!(view.snap && view.snap.plan) && $('showPlan').checked;
      showLegends();
      view.fullDraw = true;
      requestFrame();
    });
    $('closeDetails').addEventListener('click', () => { $('details').hidden = true; relayout(); });
    canvas.addEventListener('click', (e) => {
      const h = hit(e);
      if (h) showDetails(h.ds, h.node);
    });
    const tip = $('tip');
    canvas.addEventListener('mousemove', (e) => {
      const h = hit(e);
      if (!h) { tip.hidden = true; return; }
      tip.textContent = describe(h.ds, h.node);
      tip.style.left = (e.clientX + 12) + 'px';
      tip.style.top = (e.clientY + 12) + 'px';
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    let resizeTimer = 0;
    window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(relayout, 100); });
    connect();
  }

  init();
})();
