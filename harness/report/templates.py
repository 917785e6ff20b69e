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
"""

SCRIPT = """
(function () {
  var q = document.getElementById('search'), st = document.getElementById('status'),
      vd = document.getElementById('verdicts'), shown = document.getElementById('shown'),
      none = document.getElementById('none-shown'),
      rows = Array.prototype.slice.call(document.querySelectorAll('.sample'));
  rows.forEach(function (r) { r.dataset.text = r.textContent.toLowerCase(); });
  function apply() {
    var words = q.value.toLowerCase().split(/\\s+/).filter(Boolean), n = 0;
    rows.forEach(function (r) {
      var ok = words.every(function (w) { return r.dataset.text.indexOf(w) >= 0; });
      if (st.value !== 'all') { ok = ok && r.dataset.status === st.value; }
      if (vd.value === 'some') { ok = ok && r.dataset.relevant !== '0'; }
      if (vd.value === 'none') { ok = ok && r.dataset.relevant === '0'; }
      if (vd.value === 'miss') { ok = ok && r.dataset.missed === '1'; }
      r.hidden = !ok; if (ok) { n += 1; }
    });
    shown.textContent = String(n);
    none.hidden = n !== 0;
  }
  [q, st, vd].forEach(function (el) {
    el.addEventListener('input', apply); el.addEventListener('change', apply);
  });
  apply();
})();
"""

_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title><style>{{ style|safe }}</style></head>
<body>
<h1>{{ title }}</h1>
<p class="muted">{{ subtitle }}</p>
"""

RUN = _HEAD + """<h2 id="summary">Summary</h2>
<table class="summary">
{% for key, value in facts %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
<h2 id="plots">Plots</h2>
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
    <option value="miss">some chunk not relevant</option></select>
  <span><span id="shown">{{ rows|length }}</span> of {{ rows|length }} shown</span>
</div>
<p id="none-shown" class="empty muted" hidden>No sample matches these filters.</p>
{% for row in rows %}
<section class="sample" id="s-{{ loop.index }}" data-id="{{ row.id }}"
  data-status="{{ row.status }}" data-relevant="{{ row.relevant }}" data-missed="{{ row.missed }}">
<header><span class="sid">{{ row.id }}</span>
{% if row.status == 'scored' %}<span class="score">score {{ row.score }}</span>
{% else %}<span class="score">unscored</span>{% endif %}
{% for key, value in row.extra %}<span class="muted">{{ key }} {{ value }}</span>{% endfor %}
<span class="muted" title="line of samples.jsonl">line {{ row.position }}</span></header>
{% if row.question is not none %}<p class="question">{{ row.question }}</p>{% endif %}
{% if row.error %}<div class="error"><strong>⚠ Why unscored</strong>{{ row.error }}</div>{% endif %}
{% if row.reason %}<p class="reason"><strong>Why this score:</strong> {{ row.reason }}</p>
{% endif %}
{% if row.chunks %}<ol class="chunks">
{% for c in row.chunks %}<li class="chunk {{ c.css }}" data-verdict="{{ c.label }}">
<span class="badge">{{ c.icon }} {{ c.label }}</span>
<span class="meta">rank {{ loop.index }}{% if c.id is not none %} · id {{ c.id }}{% endif %}
{% for key, value in c.extra %} · {{ key }} {{ value }}{% endfor %}</span>
{% if c.text is not none %}<div class="text">{{ c.text }}</div>{% endif %}
{% if c.reason %}<div class="reason"><strong>Reason:</strong> {{ c.reason }}</div>{% endif %}
</li>
{% endfor %}</ol>{% endif %}
</section>
{% endfor %}
<script>{{ script|safe }}</script>
</body></html>
"""

SWEEP = _HEAD + """<h2 id="ranked">Jobs, best first</h2>
<table class="ranked">
<thead><tr><th class="num">rank</th><th>job</th>{% for p in params %}<th>{{ p }}</th>{% endfor %}
<th class="num">{{ objective }}</th>{% if objective != 'mean' %}<th class="num">mean</th>{% endif %}
<th class="num">scored</th>
<th class="num">unscored</th><th>report</th></tr></thead>
<tbody>{% for job in jobs %}<tr>
<td class="num">{{ loop.index }}</td><td>{{ job.name }}</td>
{% for p in params %}<td>{{ job.params.get(p, '') }}</td>{% endfor %}
<td class="num">{{ job.objective }}</td>
{% if objective != 'mean' %}<td class="num">{{ job.mean }}</td>{% endif %}
<td class="num">{{ job.n_scored }}</td><td class="num">{{ job.n_unscored }}</td>
<td>{% if job.report %}<a href="{{ job.report }}">report</a>{% endif %}</td></tr>
{% endfor %}</tbody></table>
{% if failed %}<p class="error">{{ failed }}</p>{% endif %}
<h2 id="plots">{{ objective }} by setting</h2>
{% if plots %}<div class="plots">
{% for name, alt, uri in plots %}<figure><img src="{{ uri }}" alt="{{ alt }}" title="{{ name }}">
</figure>
{% endfor %}</div>
{% else %}<p class="muted">{{ no_plots }}</p>{% endif %}
</body></html>
"""
