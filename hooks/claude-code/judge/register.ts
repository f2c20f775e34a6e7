/**
 * gitledger's boundary judge as Claude Code function hooks: compact between two pieces of work,
 * not in the middle of one.
 *
 * Needs Claude Code 2.1.278 or newer started with CLAUDE_CODE_ENABLE_FUNCTION_HOOKS=1, and
 * gitledger where the plugin's bin/gitledger-hook finds it. The plugin's hooks/hooks.json names
 * this file under "modules" ("../judge/register.ts", relative to hooks/hooks.json).
 *
 * After each step of the main conversation (never a sub-agent's):
 *   1. not judged when it is the first step of a turn, has no text, or ends the turn;
 *   2. below the floor (`gitledger judge config floor=…`, default 35% of the context window, as
 *      $.session.usage() reports it) nothing more runs;
 *   3. past it, `gitledger judge step` gets the conversation ($.session.messages(): what was said
 *      and the names and inputs of the calls; tool results travel only as their count, never
 *      their text) and the step, and answers NEXT or SAME;
 *   4. a SAME the rules are unsure of (about one step in seven) is put to the session's own model
 *      ($.model.complete: no API key, no setup), with the prompt `gitledger judge step --prompt`
 *      builds (what the person asked, the assistant's latest messages, what its calls touched,
 *      the step; never tool output): at most one call a step, a timeout, SAME on any failure or
 *      unclear answer. Each call's tokens are counted (`gitledger judge spend`, shown by
 *      `gitledger judge status`); `gitledger judge config session_model=false` turns it off;
 *   5. on NEXT, once the step's tools have run, the turn ends before its next request goes out
 *      ($.turn.abort), and when it has ended Claude Code's own compaction runs
 *      ($.session.compact(): the call /compact makes, which fires the PreCompact hook that saves
 *      the fuse snapshot) and the work carries on with "Continue." ($.prompt.submit), as a person
 *      would with Esc, /compact and "continue".
 *
 * Anything that fails here leaves the conversation alone: a judge that cannot run says SAME.
 */

import type { Register } from 'claude-code'

const DEFAULT_FLOOR = 35
const CONTINUE = 'Continue.'
const TIMEOUT_MS = 20_000
// The session's model, asked about an unsure step: a short answer, soon, or SAME.
const MODEL_TIMEOUT_MS = 15_000
const MODEL_TOKENS = 300

type Settings = { enabled: boolean; floor: number; sessionModel: boolean }
type Asked = { next: boolean; failed: boolean; input: number; output: number; reason: string }
type Pending = { turnId: string; percent: number; reason: string }
type Said = {
  role: string
  text: string
  toolUses?: { tool: string; input?: unknown }[]
  toolResults?: unknown[]
}

// The judge reads paths, commands and descriptions of calls, never a file's whole content: long
// strings in a call's input are cut, so a long session's conversation stays a small payload.
const INPUT_CHARS = 2_000
const TEXT_CHARS = 20_000

function cut(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length <= INPUT_CHARS ? value : value.slice(0, INPUT_CHARS)
  if (depth > 4 || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.slice(0, 100).map(item => cut(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) out[key] = cut(item, depth + 1)
  return out
}

/** The conversation as the judge reads it: words and calls, tool output left out. */
function shape(messages: readonly Said[]) {
  return messages.map(m => ({
    role: m.role,
    text: (m.text ?? '').slice(0, TEXT_CHARS),
    toolUses: (m.toolUses ?? []).map(use => ({ tool: use.tool, input: cut(use.input ?? {}) })),
    toolResults: (m.toolResults ?? []).map(() => ({ text: '' })),
  }))
}

/** The plugin's own launcher: it finds gitledger ($GITLEDGER_BIN, PATH, `python3 -m`). */
function cli($: any): string[] {
  return [`${$.plugin.root}/bin/gitledger-hook`]
}

// One session per process: what the module knows about it.
let settings: Settings | undefined
let pending: Pending | undefined

/** The judge's settings, read once a session: `gitledger judge config --json`. */
async function load($: any): Promise<Settings> {
  if (settings !== undefined) return settings
  settings = { enabled: true, floor: DEFAULT_FLOOR, sessionModel: true }
  try {
    const run = await $.process.run([...cli($), 'judge', 'config', '--json'], {
      timeoutMs: TIMEOUT_MS,
    })
    if (run.exitCode === 0) {
      const data = JSON.parse(run.stdout)
      settings = {
        enabled: data.enabled !== false,
        floor: typeof data.floor === 'number' ? data.floor : DEFAULT_FLOOR,
        sessionModel: data.session_model !== false,
      }
    }
  } catch {
    // No ledger yet, or no gitledger: the defaults stand.
  }
  return settings
}

/** The model's verdict is its last line, NEXT or SAME; anything else counts as SAME. */
function saysNext(answer: string): boolean {
  const lines = answer.trim().split('\n').filter(line => line.trim() !== '')
  const last = (lines[lines.length - 1] ?? '').replace(/[^A-Za-z]/g, '').toUpperCase()
  return last === 'NEXT' || last === 'VERDICTNEXT'
}

/** One call to the session's own model about an unsure step. Never throws. */
async function askModel($: any, system: string, prompt: string): Promise<Asked> {
  let answer: any
  try {
    const model = await $.session.model()
    answer = await $.model.complete({
      model,
      system,
      prompt,
      maxTokens: MODEL_TOKENS,
      timeoutMs: MODEL_TIMEOUT_MS,
    })
  } catch (error) {
    return { next: false, failed: true, input: 0, output: 0, reason: String(error) }
  }
  const usage = answer?.usage ?? {}
  const input =
    (usage.input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0)
  const output = usage.output_tokens ?? 0
  if (answer?.isAnswered !== true || typeof answer.text !== 'string') {
    return { next: false, failed: true, input, output, reason: String(answer?.reason ?? 'no answer') }
  }
  const next = saysNext(answer.text)
  return { next, failed: false, input, output, reason: answer.text.trim().split('\n')[0] ?? '' }
}

/** Count what the call cost in the session's judge state; a failure to count changes nothing. */
async function spend($: any, asked: Asked): Promise<void> {
  try {
    const session = await $.session.id()
    await $.process.run(
      [
        ...cli($),
        'judge',
        'spend',
        '--session',
        String(session),
        '--input-tokens',
        String(asked.input),
        '--output-tokens',
        String(asked.output),
        ...(asked.failed ? ['--failed'] : []),
      ],
      { timeoutMs: TIMEOUT_MS },
    )
  } catch {
    // Counting is best effort: the step's verdict stands.
  }
}

export const register: Register = on => {
  on('turn.step', async function* ($, e, next) {
    if (e.agentId === undefined && pending !== undefined && pending.turnId === e.turnId) {
      // The NEXT step's tools have run: end the turn instead of sending this request.
      await $.turn.abort({ turnId: e.turnId })
      return { turnId: e.turnId, index: e.index, answer: '', toolUses: [], stopReason: null, usage: null }
    }
    const result = yield* next(e)
    if (e.agentId !== undefined || pending !== undefined) return result
    const text = result.answer ?? ''
    const uses = result.toolUses ?? []
    if (e.index === 0 || text.trim() === '' || uses.length === 0) return result
    try {
      const s = await load($)
      if (!s.enabled) return result
      const usage = await $.session.usage()
      const percent = usage?.context?.percent
      if (typeof percent !== 'number' || percent < s.floor) return result
      const payload = {
        messages: shape(await $.session.messages()),
        step: { text, calls: uses.map(use => ({ name: use.name, input: use.input ?? {} })) },
        context_tokens: usage.context.tokens,
        window: usage.context.window,
        first_in_turn: false,
      }
      const run = await $.process.run(
        [...cli($), 'judge', 'step', '--json', '--floor', String(s.floor), ...(s.sessionModel ? ['--prompt'] : [])],
        { stdin: JSON.stringify(payload), timeoutMs: TIMEOUT_MS },
      )
      if (run.exitCode !== 0) return result
      const verdict = JSON.parse(run.stdout)
      let moves = verdict.decision === 'NEXT'
      let reason = String(verdict.reason)
      if (!moves && s.sessionModel && verdict.unsure === true && typeof verdict.prompt === 'string') {
        const asked = await askModel($, String(verdict.system ?? ''), verdict.prompt)
        await spend($, asked)
        moves = asked.next
        reason = `the session's model: ${asked.reason}`
      }
      if (moves) {
        pending = { turnId: e.turnId, percent: Math.round(percent), reason }
        try {
          $.ui.toast(`gitledger: context at ${pending.percent}%, compacting before the next piece`)
        } catch {
          // A surface that shows no toast changes nothing.
        }
      }
    } catch {
      // Any failure is SAME: the conversation goes on untouched.
    }
    return result
  })

  on('turn.complete', async ($, e, next) => {
    const out = await next(e)
    const boundary = pending
    if (boundary === undefined || e.agentId !== undefined || boundary.turnId !== e.turnId) {
      return out
    }
    pending = undefined
    try {
      const compacted = await $.session.compact()
      if (compacted !== undefined && 'skip' in compacted) return out
      // Queued: it starts a turn of its own once the session is idle, so it is not awaited here.
      void $.prompt.submit({ text: CONTINUE }).catch(() => undefined)
    } catch {
      // Compaction refused (DISABLE_COMPACT, `claude -p`): the person decides what comes next.
    }
    return out
  })
}
