// The judge's function hooks under Claude Code's own test kit (`claude plugin test`): the hooks
// here stand for the engine beneath the plugin, and `gitledger` is answered by a stub of
// $.process.run that records what the module sent (tests/test_judge.py feeds the same payload
// shape to the real `gitledger judge step`).
import { expect, test } from 'claude-code/testing'

type Run = { argv: string[]; stdin?: string }
type Step = { answer: string; toolUses: { name: string; input: unknown }[] }

const CONVERSATION = [
  { role: 'user', text: 'Fix issues 1 and 2, one at a time.', toolUses: [] },
  { role: 'assistant', text: 'Now issue 1.', toolUses: [{ tool_use_id: 'a', tool: 'Edit', input: { file_path: 'x.py' } }] },
  { role: 'user', text: '', toolUses: [], toolResults: [{ tool_use_id: 'a', text: 'TOOL OUTPUT' }] },
]

function engine(
  on: any,
  opts: {
    percent: number
    verdict?: string
    config?: string
    configExit?: number
    compactSkip?: boolean
    model?: (e: any) => any
    messages?: unknown[]
  },
) {
  const runs: Run[] = []
  const sent: number[] = []
  const seen = { aborted: [] as string[], compacted: 0, submitted: [] as string[], asked: [] as any[] }
  const steps: Step[] = []
  on('session.usage', () => ({
    value: { startedAt: 0, context: { tokens: opts.percent * 2000, window: 200000, percent: opts.percent }, rateLimits: [] },
  }))
  on('session.messages', () => ({ value: opts.messages ?? CONVERSATION }))
  on('process.run', (_: unknown, e: any) => {
    const argv: string[] = e.argv ?? e[0] ?? []
    runs.push({ argv, stdin: e.init?.stdin ?? e.stdin })
    if (argv.includes('config')) {
      return { value: { exitCode: opts.configExit ?? 0, stdout: opts.config ?? '{"enabled": true, "floor": 35}', stderr: '', isStdoutTruncated: false, isStderrTruncated: false } }
    }
    return { value: { exitCode: 0, stdout: opts.verdict ?? '{"decision": "SAME", "reason": "inside"}', stderr: '', isStdoutTruncated: false, isStderrTruncated: false } }
  })
  on('turn.abort', (_: unknown, e: any) => {
    seen.aborted.push(e.turnId)
    return { value: undefined }
  })
  on('session.compact', () => {
    seen.compacted += 1
    return opts.compactSkip ? { skip: 'compaction is switched off here' } : { messages: [{ role: 'user', text: 'Summary: issue 1 is fixed; issue 2 is next.', toolUses: [] }] }
  })
  on('prompt.submit', (_: unknown, e: any) => {
    seen.submitted.push(e.text)
    return { text: e.text }
  })
  on('ui.toast', () => ({ value: undefined }))
  on('session.model', () => ({ value: 'claude-sonnet-5' }))
  on('session.id', () => ({ value: 'sess-1' }))
  on('model.complete', (_: unknown, e: any) => {
    seen.asked.push(e)
    return opts.model ? opts.model(e) : { value: { isAnswered: true, text: 'Inside.\nSAME', usage: { input_tokens: 900, output_tokens: 12 } } }
  })
  on('turn.step', async function* (_: unknown, e: any) {
    sent.push(e.index)
    const step = steps.shift() ?? { answer: '', toolUses: [] }
    return { turnId: e.turnId, index: e.index, ...step, stopReason: step.toolUses.length ? 'tool_use' : 'end_turn', usage: null }
  })
  on('turn.complete', (_: unknown, e: any) => ({ text: e.answer }))
  return { runs, sent, seen, steps }
}

async function step($: any, turnId: string, index: number, agentId?: string) {
  const stream = $.turn.step({ turnId, index, model: 'claude-sonnet-5', messageCount: 3 + index, ...(agentId ? { agentId } : {}) })
  for await (const _ of stream) {
    // the chunks do not matter here
  }
  return await stream.result
}

const bash = { name: 'Bash', input: { command: 'pytest -q', description: 'Run the tests' } }

test('a boundary past the floor ends the turn, compacts and carries on', async ($, on) => {
  const eng = engine(on, { percent: 45, verdict: '{"decision": "NEXT", "reason": "issue 1 done, on to 2"}' })
  eng.steps.push(
    { answer: 'Starting with issue 1.', toolUses: [bash] },
    { answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] },
  )
  await step($, 't1', 0)
  await step($, 't1', 1)
  const judged = eng.runs.filter(r => r.argv.includes('step'))
  expect(judged.length).toBe(1)
  expect(judged[0].argv[0].endsWith('/bin/gitledger-hook')).toBe(true)
  expect(judged[0].argv.slice(1, 4)).toEqual(['judge', 'step', '--json'])
  const payload = JSON.parse(judged[0].stdin ?? '{}')
  expect(payload.step).toEqual({ text: 'Issue 1 passes. Now issue 2.', calls: [bash] })
  expect(payload.context_tokens).toBe(90000)
  expect(payload.window).toBe(200000)
  expect(JSON.stringify(payload.messages)).not.toContain('TOOL OUTPUT')
  // The next request of the turn is not sent: the turn ends there.
  await step($, 't1', 2)
  expect(eng.seen.aborted).toEqual(['t1'])
  expect(eng.sent).toEqual([0, 1])
  await $.turn.complete({ turnId: 't1', answer: '', durationMs: 5, isAborted: true, reason: 'aborted' })
  expect(eng.seen.compacted).toBe(1)
  expect(eng.seen.submitted).toEqual(['Continue.'])
})

test('a SAME verdict changes nothing', async ($, on) => {
  const eng = engine(on, { percent: 60 })
  eng.steps.push({ answer: 'Reading the lexer.', toolUses: [bash] }, { answer: 'Still on it.', toolUses: [bash] })
  await step($, 't2', 1)
  await step($, 't2', 2)
  await $.turn.complete({ turnId: 't2', answer: 'done', durationMs: 5, isAborted: false, reason: 'answer' })
  expect(eng.runs.filter(r => r.argv.includes('step')).length).toBe(2)
  expect(eng.sent).toEqual([1, 2])
  expect(eng.seen.aborted).toEqual([])
  expect(eng.seen.compacted).toBe(0)
})

test('below the floor nothing is judged', async ($, on) => {
  const eng = engine(on, { percent: 20, verdict: '{"decision": "NEXT", "reason": "r"}' })
  eng.steps.push({ answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] })
  await step($, 't3', 1)
  expect(eng.runs.filter(r => r.argv.includes('step')).length).toBe(0)
  expect(eng.seen.aborted).toEqual([])
})

test('the first step, a step with no text or no calls, a sub-agent: not judged', async ($, on) => {
  const eng = engine(on, { percent: 80, verdict: '{"decision": "NEXT", "reason": "r"}' })
  eng.steps.push(
    { answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] }, // first step of the turn
    { answer: '', toolUses: [bash] }, // no text
    { answer: 'All done.', toolUses: [] }, // ends the turn
    { answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] }, // a sub-agent's step
  )
  await step($, 't4', 0)
  await step($, 't4', 1)
  await step($, 't4', 2)
  await step($, 't4', 3, 'agent-1')
  expect(eng.runs.filter(r => r.argv.includes('step')).length).toBe(0)
  expect(eng.seen.aborted).toEqual([])
  expect(eng.sent).toEqual([0, 1, 2, 3])
})

test('a judge that fails leaves the conversation alone', async ($, on) => {
  const eng = engine(on, { percent: 50, verdict: 'not json' })
  eng.steps.push({ answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] }, { answer: 'Next.', toolUses: [bash] })
  await step($, 't5', 1)
  await step($, 't5', 2)
  expect(eng.sent).toEqual([1, 2])
  expect(eng.seen.aborted).toEqual([])
})

test('a compaction the engine skips is not followed by Continue.', async ($, on) => {
  const eng = engine(on, { percent: 45, verdict: '{"decision": "NEXT", "reason": "r"}', compactSkip: true })
  eng.steps.push({ answer: 'Issue 1 passes. Now issue 2.', toolUses: [bash] })
  await step($, 't6', 1)
  await step($, 't6', 2)
  await $.turn.complete({ turnId: 't6', answer: '', durationMs: 5, isAborted: true, reason: 'aborted' })
  expect(eng.seen.aborted).toEqual(['t6'])
  expect(eng.seen.compacted).toBe(1)
  expect(eng.seen.submitted).toEqual([])
})

const UNSURE = '{"decision": "SAME", "reason": "inside", "unsure": true, "system": "You judge.", "prompt": "## The step to judge"}'

test('an unsure step is put to the session model once; its NEXT ends the turn; the cost is counted', async ($, on) => {
  const eng = engine(on, {
    percent: 45,
    verdict: UNSURE,
    model: () => ({ value: { isAnswered: true, text: 'It moves on.\nNEXT', usage: { input_tokens: 1200, output_tokens: 9 } } }),
  })
  eng.steps.push({ answer: 'Now the docs.', toolUses: [bash] })
  await step($, 't7', 1)
  const judged = eng.runs.filter(r => r.argv.includes('step'))
  expect(judged[0].argv).toContain('--prompt')
  expect(eng.seen.asked.length).toBe(1)
  expect(eng.seen.asked[0].model).toBe('claude-sonnet-5')
  expect(eng.seen.asked[0].system).toBe('You judge.')
  expect(eng.seen.asked[0].prompt).toBe('## The step to judge')
  expect(typeof eng.seen.asked[0].timeoutMs).toBe('number')
  const spent = eng.runs.filter(r => r.argv.includes('spend'))
  expect(spent.length).toBe(1)
  expect(spent[0].argv.slice(1)).toEqual(['judge', 'spend', '--session', 'sess-1', '--input-tokens', '1200', '--output-tokens', '9'])
  await step($, 't7', 2)
  expect(eng.seen.aborted).toEqual(['t7'])
})

test('a model that fails or answers unclearly is SAME, and the failed call is counted', async ($, on) => {
  const eng = engine(on, { percent: 45, verdict: UNSURE, model: () => ({ value: { isAnswered: false, reason: 'api-error' } }) })
  eng.steps.push({ answer: 'Now the docs.', toolUses: [bash] }, { answer: 'More docs.', toolUses: [bash] })
  await step($, 't8', 1)
  await step($, 't8', 2)
  expect(eng.seen.asked.length).toBe(2)
  expect(eng.seen.aborted).toEqual([])
  const spent = eng.runs.filter(r => r.argv.includes('spend'))
  expect(spent.length).toBe(2)
  expect(spent[0].argv).toContain('--failed')
})

test('a sure SAME, or session_model=false, asks no model', async ($, on) => {
  const sure = engine(on, { percent: 45 })
  sure.steps.push({ answer: 'Reading.', toolUses: [bash] })
  await step($, 't9', 1)
  expect(sure.seen.asked.length).toBe(0)
})

test('session_model=false: the step is judged without --prompt and no model is asked', async ($, on) => {
  const eng = engine(on, { percent: 45, verdict: UNSURE, config: '{"enabled": true, "floor": 35, "session_model": false}' })
  eng.steps.push({ answer: 'Now the docs.', toolUses: [bash] })
  await step($, 't10', 1)
  const judged = eng.runs.filter(r => r.argv.includes('step'))
  expect(judged.length).toBe(1)
  expect(judged[0].argv).not.toContain('--prompt')
  expect(eng.seen.asked.length).toBe(0)
  expect(eng.seen.aborted).toEqual([])
})

test('long call inputs are cut before the conversation is handed over', async ($, on) => {
  const big = 'x'.repeat(50_000)
  const write = { role: 'assistant', text: 'Writing.', toolUses: [{ tool_use_id: 'b', tool: 'Write', input: { file_path: 'big.txt', content: big } }] }
  const eng = engine(on, { percent: 45, messages: [...CONVERSATION, write] })
  eng.steps.push({ answer: 'Still on it.', toolUses: [bash] })
  await step($, 't11', 1)
  const judged = eng.runs.filter(r => r.argv.includes('step'))
  const payload = JSON.parse(judged[0].stdin ?? '{}')
  const sent = payload.messages[payload.messages.length - 1].toolUses[0]
  expect(sent.input.file_path).toBe('big.txt')
  expect(sent.input.content.length).toBe(2000)
})
