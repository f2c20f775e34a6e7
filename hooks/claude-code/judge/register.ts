/**
 * gitledger's boundary judge as Claude Code function hooks: compact between two pieces of work,
 * not in the middle of one.
 *
 * Needs Claude Code 2.1.278 or newer started with CLAUDE_CODE_ENABLE_FUNCTION_HOOKS=1, and
 * gitledger importable by `python3` (`python3 -m gitledger`). The plugin's hooks module
 * (hooks/register.ts at the plugin root) re-exports or calls `register` from this file.
 *
 * After each step of the main conversation (never a sub-agent's):
 *   1. not judged when it is the first step of a turn, has no text, or ends the turn;
 *   2. below the floor (`gitledger judge config floor=…`, default 35% of the context window, as
 *      $.session.measure() reports it) nothing runs at all;
 *   3. past it, `gitledger judge step` gets the conversation ($.session.messages(): what the
 *      assistant said and the names and inputs of its calls; tool results travel only as
 *      their count, never their text) and the step, and answers NEXT or SAME;
 *   4. on NEXT the turn ends before its next request goes out ($.turn.abort), and once it has
 *      ended Claude Code's own compaction runs ($.session.compact(): the call /compact makes,
 *      which also fires the PreCompact hook that saves the fuse snapshot) and the work carries on
 *      with "Continue." ($.prompt.submit), as a person would with Esc, /compact and "continue".
 *
 * Anything that fails here leaves the conversation alone: a judge that cannot run says SAME.
 */

import type { Register } from 'claude-code'

const CLI = ['python3', '-m', 'gitledger']
const DEFAULT_FLOOR = 35
const CONTINUE = 'Continue.'

type Settings = { enabled: boolean; floor: number }
type Pending = { turnId: string; percent: number; reason: string }
type Use = { tool: string; input?: unknown }
type Said = { role: string; text: string; toolUses?: Use[]; toolResults?: unknown[] }

/** The conversation as the judge reads it: words and calls, tool output blanked. */
function shape(messages: Said[]) {
  return messages.map(m => ({
    role: m.role,
    text: m.text,
    toolUses: (m.toolUses ?? []).map(use => ({ tool: use.tool, input: use.input ?? {} })),
    toolResults: (m.toolResults ?? []).map(() => ({ text: '' })),
  }))
}

export const register: Register = on => {
  let settings: Settings | undefined
  let pending: Pending | undefined

  /** The judge's settings, read once a session: `gitledger judge config --json`. */
  async function load($: any): Promise<Settings> {
    if (settings !== undefined) return settings
    settings = { enabled: true, floor: DEFAULT_FLOOR }
    try {
      const run = await $.process.run({ argv: [...CLI, 'judge', 'config', '--json'] })
      if (run.exitCode === 0) {
        const data = JSON.parse(run.stdout)
        settings = {
          enabled: data.enabled !== false,
          floor: typeof data.floor === 'number' ? data.floor : DEFAULT_FLOOR,
        }
      }
    } catch {
      // No ledger yet, or no gitledger: the defaults stand.
    }
    return settings
  }

  on('turn.step', async function* ($, e, next) {
    if (e.agentId === undefined && pending !== undefined && pending.turnId === e.turnId) {
      // The NEXT step's tools have run; end the turn before this request goes out.
      await $.turn.abort({ turnId: e.turnId })
    }
    const result = yield* next(e)
    if (e.agentId !== undefined || pending !== undefined) return result
    const text: string = result.answer ?? ''
    const uses: Use[] = result.toolUses ?? []
    if (e.index === 0 || text.trim() === '' || uses.length === 0) return result
    try {
      const s = await load($)
      if (!s.enabled) return result
      const measure = await $.session.measure()
      const percent = measure?.context?.percent
      if (typeof percent !== 'number' || percent < s.floor) return result
      const messages = shape(await $.session.messages())
      const payload = {
        messages,
        step: { text, calls: uses.map(use => ({ name: use.tool, input: use.input ?? {} })) },
        context_tokens: measure.context.tokens,
        window: measure.context.window,
        first_in_turn: false,
      }
      const run = await $.process.run({
        argv: [...CLI, 'judge', 'step', '--json', '--floor', String(s.floor)],
        input: JSON.stringify(payload),
      })
      if (run.exitCode !== 0) return result
      const verdict = JSON.parse(run.stdout)
      if (verdict.decision === 'NEXT') {
        pending = { turnId: e.turnId, percent: Math.round(percent), reason: verdict.reason }
        $.ui.toast(`gitledger: context at ${pending.percent}%, compacting before the next piece`)
      }
    } catch {
      // Any failure is SAME: the conversation goes on untouched.
    }
    return result
  })

  on('turn.complete', async ($, e, next) => {
    const out = await next(e)
    const boundary = pending
    pending = undefined
    if (boundary === undefined) return out
    try {
      await $.session.compact()
      await $.prompt.submit({ text: CONTINUE })
    } catch {
      // Compaction refused (for example DISABLE_COMPACT, or `claude -p`): leave it to the person.
    }
    return out
  })
}
