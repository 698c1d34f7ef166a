#!/usr/bin/env python3
"""`promtool test rules` of DM's alert rules on series recorded from real scrapes of dmhost.

  dm_alerts_unit.py RULES WORK INSTANCE JOB BEFORE AFTER ALERT=SELECTOR...

BEFORE and AFTER are two /metrics scrapes of one daemon: healthy, then faulted. Every sample of
a metric that a rule of RULES reads becomes an input series with the labels a Prometheus scrape
adds (instance, job), so the names and labels are dmhost's own, never written by hand. Two test
groups, 15 s apart samples:
  healthy  BEFORE's values only: none of the ALERTs fires;
  faulted  BEFORE's values, then AFTER's: each ALERT fires at 30 s, for the series SELECTOR names
           (name{label="value",...}, a subset of its labels; it must differ between the scrapes),
           with the labels and annotations the rule gives it (rendered here from the rule file:
           $labels, and $value 1: the ALERTs given are DM's `changes(...) > 0` rules, and the
           series changes once).
Writes WORK/dm_alerts_test.json (YAML's JSON form) and runs promtool on it; exits with its status.
"""
import json
import re
import subprocess
import sys

import yaml

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n' else m.group(1), v)


def parse_labels(text):
    out, at = {}, 0
    while at < len(text):
        m = LABEL.match(text, at)
        if not m:
            raise ValueError('cannot read labels: ' + text)
        out[m.group(1)] = unescape(m.group(2))
        at = m.end()
    return out


def scrape(path):
    """{(name, frozenset(labels)): value} of an exposition; empty label values dropped (Prometheus
    treats them as absent)."""
    out = {}
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        if not line or line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError('cannot read sample: ' + line)
        labels = {k: v for k, v in parse_labels(m.group(3) or '').items() if v != ''}
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


def series_text(name, labels):
    esc = lambda v: v.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
    return name + '{' + ','.join('%s="%s"' % (k, esc(v)) for k, v in sorted(labels.items())) + '}'


def fmt_value(v):
    return str(int(v)) if v == int(v) else repr(v)


def render(template, labels, value):
    # the two forms DM's annotations use; a missing label renders empty (Prometheus' missingkey=zero)
    t = re.sub(r'\{\{\s*\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}',
               lambda m: labels.get(m.group(1), ''), template)
    return re.sub(r'\{\{\s*\$value\s*\}\}', fmt_value(value), t)


def main():
    rules_path, work, instance, job, before_p, after_p = sys.argv[1:7]
    wanted = [a.split('=', 1) for a in sys.argv[7:]]
    rules = {r['alert']: r for g in yaml.safe_load(open(rules_path))['groups'] for r in g['rules']}
    names = set()
    for r in rules.values():
        names.update(re.findall(r'\b(dm_[a-z_]+)\b', r['expr']))
    before, after = scrape(before_p), scrape(after_p)
    extra = {'instance': instance, 'job': job}
    healthy, faulted = [], []
    for key in sorted(set(before) | set(after), key=str):
        name, labels = key[0], dict(key[1])
        if name not in names:
            continue
        labels.update(extra)
        b, a = before.get(key), after.get(key)
        bv = fmt_value(b) if b is not None else '_'
        av = fmt_value(a) if a is not None else '_'
        if b is not None:
            healthy.append({'series': series_text(name, labels), 'values': ' '.join([bv] * 9)})
        faulted.append({'series': series_text(name, labels), 'values': ' '.join([bv] + [av] * 8)})
    healthy_tests, faulted_tests = [], []
    for alert, selector in wanted:
        if alert not in rules:
            sys.exit('no rule %s in %s' % (alert, rules_path))
        m = SAMPLE.match(selector + ' 0')
        sel_name = m.group(1)
        sel = {k: v for k, v in parse_labels(m.group(3) or '').items() if v != ''}
        hits = [k for k in after if k[0] == sel_name and set(sel.items()) <= set(k[1])]
        if len(hits) != 1:
            sys.exit('%s: %d series of the faulted scrape match %s' % (alert, len(hits), selector))
        labels = dict(hits[0][1])
        labels.update(extra)
        # the alerts asked for read changes(): the faulted series changes once (BEFORE -> AFTER)
        if before.get(hits[0]) == after[hits[0]]:
            sys.exit('%s: %s did not change between the scrapes' % (alert, selector))
        value = 1
        exp_labels = dict(labels)
        exp_labels.update(rules[alert].get('labels', {}))
        exp_ann = {k: render(v, labels, value) for k, v in rules[alert].get('annotations', {}).items()}
        healthy_tests.append({'eval_time': '2m', 'alertname': alert, 'exp_alerts': []})
        faulted_tests.append({'eval_time': '30s', 'alertname': alert,
                              'exp_alerts': [{'exp_labels': exp_labels, 'exp_annotations': exp_ann}]})
    test = {'rule_files': [rules_path], 'evaluation_interval': '15s',
            'tests': [{'name': 'healthy', 'interval': '15s', 'input_series': healthy,
                       'alert_rule_test': healthy_tests},
                      {'name': 'faulted', 'interval': '15s', 'input_series': faulted,
                       'alert_rule_test': faulted_tests}]}
    out = work + '/dm_alerts_test.json'
    with open(out, 'w', encoding='utf-8') as f:
        json.dump(test, f, indent=1)
    rc = subprocess.call(['promtool', 'test', 'rules', out])
    sys.exit(rc)


if __name__ == '__main__':
    main()
