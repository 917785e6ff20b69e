"""The Jinja templates of ``report.html`` (autoescaped: every text a run holds is untrusted).

Colours are Okabe–Ito's, and each verdict also carries a symbol and a word, so nothing is
told by colour alone. No external file, font or script: the report is one file.
"""

STYLE = """
:root { --rel: #0072B2; --rel-bg: #e3f0f8; --not: #D55E00; --not-bg: #fbeadf;
  --none: #6b6b6b; --none-bg: #f2f2f2; --ink: #1b1b1b; --muted: #5a5a5a; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0 auto; max-width: 1100px; padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.45rem; margin: .4rem 0 .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.muted { color: var(--muted); } code { font-size: .92em; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { text-align: left; padding: .25rem .7rem .25rem 0; vertical-align: top;
  border-bottom: 1px solid #e4e4e4; }
th { font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
.plots figure { margin: 0; flex: 1 1 460px; max-width: 660px; }
.plots img { width: 100%; height: auto; border: 1px solid #e4e4e4; }
.controls { position: sticky; top: 0; background: #fff; padding: .6rem 0; z-index: 1;
  display: flex; flex-wrap: wrap; gap: .8rem; align-items: center;
  border-bottom: 1px solid #e4e4e4; }
.controls input[type=search] { flex: 1 1 18rem; padding: .35rem .5rem; font: inherit; }
.controls select { padding: .3rem; font: inherit; }
.sample { border: 1px solid #d6d6d6; border-radius: 6px; margin: .8rem 0; padding: .6rem .8rem; }
.sample header { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: baseline; }
.sample .sid { font-weight: 600; } .sample .score { font-variant-numeric: tabular-nums; }
.question { margin: .3rem 0 .5rem; font-weight: 500; }
ol.chunks { margin: 0; padding-left: 0; list-style: none; }
.chunk { border-left: 6px solid var(--none); background: var(--none-bg); margin: .35rem 0;
  padding: .35rem .6rem; border-radius: 0 4px 4px 0; }
.chunk.v-rel { border-left-color: var(--rel); background: var(--rel-bg); }
.chunk.v-not { border-left-color: var(--not); background: var(--not-bg);
  border-left-style: dashed; }
.badge { display: inline-block; font-weight: 600; font-size: .85em; padding: 0 .4rem;
  border-radius: 3px; color: #fff; background: var(--none); margin-right: .4rem; }
.v-rel .badge { background: var(--rel); } .v-not .badge { background: var(--not); }
.chunk .meta { font-size: .85em; color: var(--muted); }
.chunk .text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .15rem 0; }
.reason { font-size: .92em; }
.error { border-left: 6px solid var(--ink); background: var(--none-bg); padding: .35rem .6rem;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.error strong { display: block; }
.empty { padding: 1rem; text-align: center; }
.reference { margin: .2rem 0 .5rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.missed { margin-top: .5rem; } .missed ul { margin: .2rem 0 0; padding-left: 0; list-style: none; }
.chunk.v-miss { border-left: 6px solid var(--ink); background: #fff; }
.v-miss .badge { background: var(--ink); }
.pager button, #worst { font: inherit; padding: .2rem .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .2rem; }
.sample .variant { font-variant-numeric: tabular-nums; border: 1px solid #d6d6d6;
  border-radius: 3px; padding: 0 .35rem; font-size: .9em; }
.conf-body { display: flex; flex-wrap: wrap; gap: .5rem 2rem; align-items: flex-start; }
.conf-note { border-left: 6px solid #E69F00; background: #fdf3df; padding: .35rem .6rem; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .4rem;
  border-radius: 2px; } .says { font-weight: 400; font-size: .85em; white-space: normal; }
h4 { font-size: .95rem; margin: 1rem 0 .2rem; } .conf-plot { max-width: 100%; height: auto; }
.headline { display: flex; flex-wrap: wrap; gap: .5rem 2.5rem; align-items: center;
  border: 1px solid #d6d6d6; border-radius: 6px; padding: .6rem 1.2rem; margin: .6rem 0; }
.headline .mean { font-size: 3rem; font-weight: 700; line-height: 1.1;
  font-variant-numeric: tabular-nums; } .headline .label { color: var(--muted); }
.headline .facts { flex: 1 1 30rem; display: grid; gap: .25rem; }
#worst-samples { margin-top: 1rem; } .hint { margin: 0 0 .3rem; font-size: .9em; }
.worst .sample { margin: .4rem 0; padding: .35rem .7rem; cursor: zoom-in; }
.worst .sample.compact .question { margin: .1rem 0 .2rem; }
.worst .compact .chunk { display: flex; gap: .6rem; align-items: baseline; margin: .15rem 0;
  padding: .1rem .5rem; } .worst .compact .chunk > * { flex: none; }
.worst .compact .chunk .text { flex: 1 1 0; min-width: 0; margin: 0; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
.worst .compact .reference, .worst .compact .reason, .worst .compact .missed li .text {
  display: none; } .worst .sample:not(.compact) { cursor: zoom-out; }
.worst .compact .missed, .worst .compact .missed ul { display: flex; flex-wrap: wrap;
  gap: .2rem .6rem; align-items: baseline; margin: .2rem 0 0; font-size: .92em; }
.worst .compact .missed li { margin: 0; padding: .05rem .5rem; }
details.settings > summary { cursor: pointer; font-weight: 600; margin: .8rem 0 .3rem; }
"""

SCRIPT = """
(function () {
  // The samples live in the page's JSON data; only one page of them is in the DOM at a time,
  // built with textContent (never innerHTML), so no text a run holds is parsed as markup.
  var rows = JSON.parse(document.getElementById('rows-data').textContent),
      size = Number(document.getElementById('samples-list').dataset.pageSize) || 50,
      q = document.getElementById('search'), st = document.getElementById('status'),
      vd = document.getElementById('verdicts'), so = document.getElementById('sort'),
      shown = document.getElementById('shown'), none = document.getElementById('none-shown'),
      list = document.getElementById('samples-list'), pageNo = document.getElementById('page'),
      pages = document.getElementById('pages'), prev = document.getElementById('prev'),
      next = document.getElementById('next'), worst = document.getElementById('worst'),
      VERDICT = {relevant: ['v-rel', '\\u2713'], 'not relevant': ['v-not', '\\u2717'],
                 'no verdict': ['v-none', '\\u2013']},
      matching = [], page = 0;
  rows.forEach(function (r) {  // what the page's data leaves out is empty
    r.chunks = r.chunks || []; r.missed = r.missed || []; r.extra = r.extra || [];
    r.variants = r.variants || [];
    r.value = r.value === undefined ? null : r.value;
    r.relevant = r.relevant === undefined ? null : r.relevant;
    r.chunks.forEach(function (c) { c.extra = c.extra || []; });
  });
  function haystack(r) {
    var parts = [r.id, r.question, r.reference, r.response, r.error, r.reason];
    r.chunks.forEach(function (c) { parts.push(c.id, c.text, c.reason, c.label); });
    r.missed.forEach(function (m) { parts.push(m.id, m.text); });
    r.haystack = parts.filter(function (p) { return p; }).join('\\n').toLowerCase();
    return r.haystack;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function labelled(cls, label, text) {
    var p = el('div', cls); p.appendChild(el('strong', null, label + ' '));
    p.appendChild(document.createTextNode(text)); return p;
  }
  function sample(r) {
    var s = el('section', 'sample'), h = el('header');
    s.id = 's-' + r.position; s.dataset.id = r.id; s.dataset.status = r.status;
    h.appendChild(el('span', 'sid', r.id));
    h.appendChild(el('span', 'score', r.status === 'scored' ? 'score ' + r.score : 'unscored'));
    r.extra.forEach(function (kv) { h.appendChild(el('span', 'muted', kv[0] + ' ' + kv[1])); });
    r.variants.forEach(function (kv) {
      h.appendChild(el('span', 'variant', kv[0] + ' ' + kv[1]));
    });
    var line = el('span', 'muted', 'line ' + r.position); line.title = 'line of samples.jsonl';
    h.appendChild(line); s.appendChild(h);
    if (r.question != null) { s.appendChild(el('p', 'question', r.question)); }
    if (r.reference != null) {
      s.appendChild(labelled('reference', 'Reference answer:', r.reference));
    }
    if (r.response != null) { s.appendChild(labelled('reference', 'Response:', r.response)); }
    if (r.error) { s.appendChild(labelled('error', '\\u26a0 Why unscored', r.error)); }
    if (r.reason) { s.appendChild(labelled('reason', 'Why this score:', r.reason)); }
    if (r.chunks.length) {
      var ol = el('ol', 'chunks');
      r.chunks.forEach(function (c, i) {
        var look = VERDICT[c.label] || VERDICT['no verdict'];
        var li = el('li', 'chunk ' + look[0]); li.dataset.verdict = c.label;
        li.appendChild(el('span', 'badge', look[1] + ' ' + c.label));
        var meta = 'rank ' + (i + 1) + (c.id != null ? ' \\u00b7 id ' + c.id : '');
        c.extra.forEach(function (kv) { meta += ' \\u00b7 ' + kv[0] + ' ' + kv[1]; });
        li.appendChild(el('span', 'meta', meta));
        if (c.text != null) { li.appendChild(el('div', 'text', c.text)); }
        if (c.reason) { li.appendChild(labelled('reason', 'Reason:', c.reason)); }
        ol.appendChild(li);
      });
      s.appendChild(ol);
    }
    if (r.missed.length) {
      var box = el('div', 'missed');
      box.appendChild(el('strong', null, 'Missed: ' + r.missed.length +
        ' relevant document' + (r.missed.length === 1 ? '' : 's') + ' not retrieved'));
      var ul = el('ul');
      r.missed.forEach(function (m) {
        var li = el('li', 'chunk v-miss');
        li.appendChild(el('span', 'badge', '\\u25cb missed'));
        var grade = m.grade != null ? ' \\u00b7 grade ' + m.grade : '';
        li.appendChild(el('span', 'meta', 'id ' + m.id + grade));
        if (m.text != null) { li.appendChild(el('div', 'text', m.text)); }
        ul.appendChild(li);
      });
      box.appendChild(ul); s.appendChild(box);
    }
    return s;
  }
  function keep(r, words) {
    if (st.value !== 'all' && r.status !== st.value) { return false; }
    if (vd.value === 'some' && !(r.relevant > 0)) { return false; }
    if (vd.value === 'none' && r.relevant !== 0) { return false; }
    if (vd.value === 'miss' && !r.irrelevant) { return false; }
    if (vd.value === 'missed' && !r.missed.length) { return false; }
    if (!words.length) { return true; }
    var hay = r.haystack || haystack(r);  // built on the first search, not at load
    return words.every(function (w) { return hay.indexOf(w) >= 0; });
  }
  function order(a, b) {
    if (so.value === 'position') { return a.position - b.position; }
    var x = a.value, y = b.value;  // unscored samples last either way
    if (x === null || y === null) { return (x === null) - (y === null) || a.position - b.position; }
    return (so.value === 'worst' ? x - y : y - x) || a.position - b.position;
  }
  function draw() {
    var last = Math.max(0, Math.ceil(matching.length / size) - 1);
    page = Math.min(Math.max(page, 0), last);
    var frag = document.createDocumentFragment();
    matching.slice(page * size, (page + 1) * size).forEach(function (r) {
      frag.appendChild(sample(r));
    });
    list.replaceChildren(frag);
    shown.textContent = String(matching.length);
    pageNo.textContent = String(matching.length ? page + 1 : 0);
    pages.textContent = String(last + (matching.length ? 1 : 0));
    prev.disabled = page === 0; next.disabled = page >= last;
    none.hidden = matching.length !== 0;
  }
  function apply() {
    var words = q.value.toLowerCase().split(/\\s+/).filter(Boolean);
    matching = rows.filter(function (r) { return keep(r, words); });
    matching.sort(order); page = 0; draw();
  }
  [q, st, vd, so].forEach(function (e) {
    e.addEventListener('input', apply); e.addEventListener('change', apply);
  });
  prev.addEventListener('click', function () { page -= 1; draw(); list.scrollIntoView(); });
  next.addEventListener('click', function () { page += 1; draw(); list.scrollIntoView(); });
  worst.addEventListener('click', function () { so.value = 'worst'; apply(); });
  apply();
  var top = document.getElementById('worst-list'), at = {};  // the first screen's worst
  rows.forEach(function (r) { at[r.position] = r; });
  (top.dataset.positions || '').split(' ').filter(Boolean).forEach(function (p) {
    var s = sample(at[p]);  // a copy of the sample drawn below: its own id, no data-id
    s.id = 'w-' + p; s.dataset.worst = s.dataset.id; delete s.dataset.id;
    s.classList.add('compact');
    s.addEventListener('click', function () { s.classList.toggle('compact'); });
    top.appendChild(s);
  });
})();
"""

HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title><style>{{ style|safe }}</style></head>
<body>
<h1>{{ title }}</h1>
<p class="muted">{{ subtitle }}</p>
"""

RUN = HEAD + """{{ first|safe }}<h2 id="summary">Summary</h2>
<table class="summary">
{% for key, value in facts %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
<details class="settings" id="settings"><summary>Settings (options, every group's settings,
the dataset's sha256)</summary><table class="settings">
{% for key, value in settings %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table></details>
{% if variants %}<h2 id="variants">Variants</h2>
<p class="muted">Every variant scored the same retrieved chunks; the summary above is the
first one's.</p>
{% for v in variants %}<h3 id="variant-{{ v.name }}">{{ v.name }}</h3>
<table class="variant">
{% for key, value in v.facts %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
{% if v.by_rank %}<table class="by-rank"><tr><th>rank</th>
{% for rank, _ in v.by_rank %}<td class="num">{{ rank }}</td>{% endfor %}</tr>
<tr><th>precision</th>{% for _, p in v.by_rank %}<td class="num">{{ p }}</td>{% endfor %}</tr>
</table>{% endif %}
{% endfor %}{% endif %}
{{ cost|safe }}{{ confidence|safe }}<h2 id="plots">Plots</h2>
{% if plots %}<div class="plots">
{% for name, alt, uri in plots %}<figure><img src="{{ uri }}" alt="{{ alt }}" title="{{ name }}">
</figure>
{% endfor %}</div>
{% else %}<p class="muted">{{ no_plots }}</p>{% endif %}
<h2 id="samples">Samples</h2>
<p class="muted">{{ rows_note }}</p>
<div class="controls" role="search">
  <label for="search">Search</label>
  <input type="search" id="search" placeholder="id, question, chunk text, reason, error">
  <label for="status">Samples</label>
  <select id="status"><option value="all">all</option><option value="scored">scored</option>
    <option value="unscored">unscored</option></select>
  <label for="verdicts">Chunks</label>
  <select id="verdicts"><option value="any">any verdicts</option>
    <option value="some">some chunk relevant</option>
    <option value="none">no chunk relevant</option>
    <option value="miss">some chunk not relevant</option>
    <option value="missed">a relevant document missed</option></select>
  <label for="sort">Order</label>
  <select id="sort"><option value="position">as run</option>
    <option value="worst">worst first</option><option value="best">best first</option></select>
  <button type="button" id="worst">Worst first</button>
  <span><span id="shown">{{ n_rows }}</span> of {{ n_rows }} shown</span>
  <span class="pager"><button type="button" id="prev" aria-label="previous page">&larr;</button>
    page <span id="page">1</span> of <span id="pages">1</span>
    <button type="button" id="next" aria-label="next page">&rarr;</button></span>
</div>
<p id="none-shown" class="empty muted" hidden>No sample matches these filters.</p>
<div id="samples-list" data-page-size="{{ page_size }}"></div>
<noscript><p class="muted">The samples are drawn by the page's script; samples.jsonl has
them all.</p></noscript>
<script type="application/json" id="rows-data">{{ rows_json|safe }}</script>
<script>{{ script|safe }}</script>
</body></html>
"""
