"""The papers' docs quote the reproduce commands' reports (docs/reproductions/): each quoted number
is recomputed here from the report's own tables, so a report remade or a sentence edited that no
longer agrees fails, with the claim named."""
import os
import re

import pytest

from common.launch import app
from common.tools import speed_report

DOCS = os.path.join(app.PROJECT_ROOT, 'docs')


def _report(name):
    return os.path.join(DOCS, 'reproductions', f'{name}.md')


def _tables(name):
    return speed_report.read_tables(_report(name))


def _minutes(name):
    """The report's own duration, as its header prints it."""
    with open(_report(name)) as f:
        return re.search(r' in (\d+\.\d) min;', f.read()).group(1)


def _number(text):
    """The mean of a '1,234 +- 5' cell, or a plain '0.95' / '53%'."""
    return float(text.split('+-')[0].replace(',', '').rstrip('%x '))


def _span(values, digits=2):
    return f'{min(values):.{digits}f}-{max(values):.{digits}f}'


def _paac():
    rows = _tables('paac')['Figure 2: time usage for different ne, archnips and archnature']
    cell = {(row['network'], int(row['ne'])): row for row in rows}
    nips32 = cell[('archnips', 32)]
    acting_learning = round(_number(nips32['act']) + _number(nips32['learn']))
    nature_drop = cell[('archnature', 32)]['archnature vs archnips'].lstrip('-')
    rise = (_number(cell[('archnips', 256)]['steps/s (ours)'])
            / _number(cell[('archnips', 16)]['steps/s (ours)']))
    return [f'(2026-11-29, {_minutes("paac")} min', f'spent {nips32["env"]} in the environments '
            f'and {acting_learning}% acting and learning', f'archnature ran {nature_drop} fewer',
            f'{rise:.1f}x from ne = 16 to 256 for archnips']


def _accel():
    tables = _tables('accelerated_methods')
    figure = tables['Figure 1b: sampling speed against simulators per core']
    at16 = [_number(row['with / without inference']) for row in figure
            if row['simulators per core'] == '16']
    ahead = all(_number(sync['steps/s per core']) > _number(alternating['steps/s per core'])
                for sync in figure if sync['sampler'] == 'synchronized'
                and int(sync['simulators per core']) <= 8
                for alternating in figure if alternating['sampler'] == 'alternating'
                and (alternating['cores'], alternating['simulators per core'])
                == (sync['cores'], sync['simulators per core']))
    barrier = tables['Table 3: sampling speed with and without a barrier every five steps']
    ratios = [_number(row['sync / async']) for row in barrier]
    paper = [_number(row['paper sync / async']) for row in barrier]
    claims = [f'(2026-11-29, {_minutes("accelerated_methods")} min', f'reach {_span(at16)} of',
              f'costs {round(100 * (1 - max(ratios)))}-{round(100 * (1 - min(ratios)))}% (sync / '
              f'async {_span(ratios)}; the paper {_span(paper)})']
    assert ahead, 'the synchronized sampler is no longer ahead of the alternating one at 2-8'
    return claims


def _ga3c():
    tables = _tables('ga3c')
    anneal = tables['Figures 2 and 4, section 5.1: the annealer from 1/1/1, queues and the profile']
    tps = [float(row['TPS']) for row in anneal]
    last = anneal[-6:]  # the plateau the docs quote
    settings = {name: _span([int(row[name]) for row in last], 0) for name in ('NP', 'NT', 'NA')}
    late_tps = [float(row['TPS']) for row in last]
    assert max(late_tps) - min(late_tps) <= 0.1 * max(late_tps), 'no TPS plateau at the end'
    assert min(late_tps) >= 1.5 * tps[0], 'the annealer no longer raises TPS by half'
    seconds = [row['elapsed'].split()[0] for row in (last[0], last[-1])]
    batch = {int(row['min batch']): row for row in tables[
        'Figure 7, systems side: minimum training batch size against TPS and policy lag']}
    assert _number(batch[40]['PPS']) > _number(batch[1]['PPS']), 'PPS no longer rises with it'
    speedups = [_number(row['speedup']) for row in
                tables['Table 2: PPS of GA3C and the CPU A3C, small and large networks']]
    assert speedups[1:] == sorted(speedups[1:]), 'the speedup no longer rises as the stride falls'
    return [f'(2026-11-29, {_minutes("ga3c")} min', f'TPS from {tps[0]} at 1/1/1 to a plateau '
            f'of {_span(late_tps, 1)} over its last 6 intervals ({seconds[0]}-{seconds[1]} s), at '
            f'NP {settings["NP"]}, NT {settings["NT"]} and NA {settings["NA"]}',
            f'minimum batch of 40 ({_number(batch[40]["TPS"])})',
            f'cut TPS from {_number(batch[1]["TPS"])} '
            f'to {_number(batch[40]["TPS"])} and the mean policy lag from '
            f'{batch[1]["mean policy lag (updates)"]} to {batch[40]["mean policy lag (updates)"]}',
            f'was {speedups[0]:.2f}x for the small network and {_span(speedups[1:])}x for the '
            'large']


def _fast_dqn():
    tables = _tables('fast_dqn')
    cells = {(row['mode'], int(row['W'])): row for row in
             tables['Tables 1-3: runtime by mode and actor threads']}
    fastest = min(cells, key=lambda key: _number(cells[key]['hours / 50M (ours)']))
    assert fastest == ('both', 8), f'{fastest} is now the fastest cell'
    both8 = cells[('both', 8)]
    spread = max(_number(row['spread']) for row in cells.values())
    samplers = {(int(row['W']), row['environments in']): row for row in tables[
        "Actor rounds alone: the W environments in threads, processes or ale_py's vector env"]}
    with open(_report('fast_dqn')) as f:
        learner_hours = [float(hours) for hours in re.findall(
            r'Learner-only bound \(the steps/F minibatches alone\): ([\d.]+) \+-', f.read())]
    bf16 = {(row['mode'], int(row['W'])): row for row in
            tables['Tables 1-3: runtime by mode and actor threads (bfloat16)']}
    both8_gain = (_number(both8['hours / 50M (ours)'])
                  / _number(bf16[('both', 8)]['hours / 50M (ours)']))
    in_process, in_vector = (_number(samplers[(1, where)]['steps/s'])
                             / _number(samplers[(1, 'thread')]['steps/s'])
                             for where in ('process', 'vector'))
    ratio = {(count, where): samplers[(count, where)]['x W=1 (same place)']
             for count in (2, 8) for where in ('thread', 'process', 'vector')}
    assert _number(ratio[(2, 'vector')]) >= 1.6, 'the vector env is no longer 1.6x at W = 2'
    assert max(_number(samplers[(2, 'vector')]['spread']),
               _number(samplers[(1, 'vector')]['spread'])) < 10, 'a vector cell spreads >= 10%'
    return [f'(2026-11-29, {_minutes("fast_dqn")} min', f'spread was at most {spread}% of its mean',
            f'fastest, {both8["speedup (ours)"]} standard W = 1 (the paper: '
            f'{both8["(paper, Table 3)"]}), at {both8["ours / learner-only"]} of the learner-only',
            f'concurrent column gives ({cells[("concurrent", 1)]["speedup (ours)"]} here, '
            f'{cells[("concurrent", 1)]["(paper, Table 3)"]} there)',
            f'(standard W = 8 {cells[("standard", 8)]["speedup (ours)"]}, against the paper\'s '
            f'{cells[("standard", 8)]["(paper, Table 3)"]})',
            f'in the vector env {ratio[(2, "vector")]} ({ratio[(8, "vector")]} at W = 8), in '
            f'worker processes {ratio[(2, "process")]} ({ratio[(8, "process")]} at W = 8), in '
            f'threads {ratio[(2, "thread")]} ({ratio[(8, "thread")]} at W = 8)',
            f'(W = 1 in a process ran at {in_process:.2f} of W = 1 in the thread)',
            f'(W = 1 there ran at {in_vector:.2f} of the thread\'s',
            f'learner-only time fell {learner_hours[0] / learner_hours[1]:.2f}x and both W = 8 '
            f'{both8_gain:.2f}x, to {bf16[("both", 8)]["ours / learner-only"]} of its own bound']


def _durations():
    minutes = [float(_minutes(name)) for name in ('paac', 'accelerated_methods', 'ga3c', 'fast_dqn')]
    return [f'({min(minutes):.0f}-{max(minutes):.0f} min here)']


def _each_duration():
    return [_durations()[0].replace(' here)', ' each);').replace('(', '(2026-11-29, ')]


CLAIMS = {'papers/paac.md': _paac, 'papers/fast_dqn.md': _fast_dqn,
          'papers/accelerated_methods.md': _accel, 'papers/ga3c.md': _ga3c,
          '../README.md': _durations, 'code_map.md': _each_duration}


@pytest.mark.parametrize('document', sorted(CLAIMS))
def test_each_quoted_reproduction_number_is_the_reports(document):
    with open(os.path.join(DOCS, document)) as f:
        text = f.read()
    flat = ' '.join(text.split())
    for claim in CLAIMS[document]():
        assert ' '.join(claim.split()) in flat, f'{document} does not say {claim!r}'
