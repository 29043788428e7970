/**
 * The catalogue of agent CLI dialogs gc knows: startup dialogs it answers itself (folder
 * trust, API-key notices), sign-in choices and key fields only an operator can answer, and
 * tool approval prompts. Data only: how each is recognised (parse.ts reads it), what its
 * options mean, which one is safe, and the key timing a program needs (keys.ts uses it).
 */

/** One option a catalogued dialog may show, by role (`accept`, `exit`, `approve`, …). */
export interface DialogOptionSpec {
  readonly role: string;
  /** Matched against the option's label (the text after the marker and `N.`). */
  readonly label: RegExp;
}

/**
 * A catalogued dialog: how to recognise it, what its options mean, which one is safe.
 * Recognition is scoped: the `question` locates the dialog, and its options are read only
 * from the block below the question (up to the box's bottom edge or a rule line), so other
 * numbered lists on the screen (tips, logos, transcripts) are never taken for its options.
 */
export interface DialogSpec {
  /** Stable id, e.g. `trust-folder`. */
  readonly id: string;
  /**
   * `startup` dialogs are answered automatically during start; `approval` prompts and
   * `operator` dialogs (sign-in choices) are pending interactions gc never answers itself.
   */
  readonly kind: "startup" | "approval" | "operator";
  readonly description: string;
  /**
   * The question. Matched against the screen's text with lines joined by one space (so a
   * question wrapped at any width matches); the last match on screen is the dialog.
   */
  readonly question: RegExp;
  /** Further patterns that must be on screen (anywhere). */
  readonly detect?: readonly RegExp[] | undefined;
  /** The options gc knows. Options matching none are tolerated as role `other`. */
  readonly options: readonly DialogOptionSpec[];
  /** Roles that must be offered, or the layout is unfamiliar. Default: `safeRole`. */
  readonly required?: readonly string[] | undefined;
  /** Startup dialogs: the role gc chooses. */
  readonly safeRole?: string | undefined;
  /**
   * A dialog without options, an input field: a `startup` one is prefilled (e.g. an API key
   * taken from the environment) and the confirm key submits it as shown; an `operator` one
   * waits for a person to type into it (gc never types a secret), and is reported as a
   * pending interaction with no options and `metadata.input` set.
   */
  readonly input?: boolean | undefined;
  /** An `operator` input field's pending prompt (its own text is a placeholder). */
  readonly prompt?: string | undefined;
  /** Key names; default `Up`, `Down`, `Enter`. */
  readonly keys?: { readonly up?: string; readonly down?: string; readonly confirm?: string } | undefined;
  /**
   * The program drops the confirm key pressed this soon after its menu appeared (Codex's
   * "Sign in another way" ignores an Enter within ~1 s of the Enter that opened it): the
   * confirm key waits until gc has seen the menu on screen this long. Default: no wait.
   */
  readonly confirmAfterMs?: number | undefined;
  /**
   * Its options are drawn side by side on one line of its block (opencode's `Allow once
   * Allow always   Reject`), two or more blanks apart; read left to right up to the first
   * text that is no known option (key hints on the same line).
   */
  readonly row?: boolean | undefined;
  /**
   * The program marks the option under its cursor by colour only, and puts the cursor on
   * the first option whenever the dialog appears: gc reads it there and answers only with
   * that option or an option's own key ({@link optionKeys}); moving the cursor is refused,
   * since no screen text could confirm where it went.
   */
  readonly cursorOnFirst?: boolean | undefined;
  /** Keys that choose an option directly, by role (opencode: Escape rejects). */
  readonly optionKeys?: Readonly<Record<string, string>> | undefined;
}

/**
 * The built-in catalogue, checked against the recorded screens in `test/fixtures/screens/`
 * (Claude Code 2.1, Codex 0.171, Gemini CLI 0.61, Copilot CLI 1.0, opencode 1.18). Startup: folder trust (all four),
 * Claude's custom-API-key and bypass-permissions notices, Gemini's auth choice and API-key
 * field when the key is in the environment, usage-limit notices. Operator: sign-in choices
 * that need a person (Codex, Gemini without a key) and Codex's API-key field. Approval:
 * tool/edit prompts.
 */
export const DIALOG_CATALOGUE: readonly DialogSpec[] = [
  {
    id: "trust-folder",
    kind: "startup",
    description: "workspace trust (Claude Code, Codex, Gemini CLI, GitHub Copilot CLI)",
    question:
      /Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)\?|Is this a project you created or one you trust\?|Do you trust this folder\?/i,
    options: [
      {
        role: "accept",
        // Copilot CLI: a bare "Yes" trusts for this session only (never "and remember").
        label:
          /^(?:(?:Yes, (?:proceed|continue|I trust this folder|allow Codex to work in this folder)|Trust folder)\b|Yes$)/i,
      },
      { role: "accept-parent", label: /^Trust parent folder\b/i },
      { role: "accept-remember", label: /^Yes, and remember this folder\b/i },
      { role: "exit", label: /^(?:(?:No, (?:exit|quit|cancel)|Don't trust)\b|No(?: \(Esc\))?$)/i },
    ],
    required: ["accept", "exit"],
    safeRole: "accept",
  },
  {
    id: "bypass-permissions",
    kind: "startup",
    description: "Claude Code bypass-permissions warning",
    question: /Bypass Permissions mode/i,
    options: [
      { role: "exit", label: /^No, exit\b/i },
      { role: "accept", label: /^Yes, I accept\b/i },
    ],
    required: ["accept", "exit"],
    safeRole: "accept",
  },
  {
    id: "custom-api-key",
    kind: "startup",
    description: "Claude Code: custom API key found in the environment (uses it)",
    question: /Do you want to use this API key\?/i,
    detect: [/Detected a custom API key in your environment/i],
    options: [
      { role: "accept", label: /^Yes\b/i },
      { role: "decline", label: /^No\b/i },
    ],
    required: ["accept", "decline"],
    safeRole: "accept",
  },
  {
    id: "gemini-auth-api-key",
    kind: "startup",
    description: "Gemini CLI auth choice when GEMINI_API_KEY is set (chooses the key)",
    question: /How would you like to authenticate for this project\?/i,
    detect: [/Existing API key detected \(GEMINI_API_KEY\)/i],
    options: [
      { role: "api-key", label: /^Use Gemini API Key\b/i },
      { role: "google", label: /^(?:Sign in|Login) with Google\b/i },
      { role: "vertex", label: /^Vertex AI\b/i },
    ],
    required: ["api-key"],
    safeRole: "api-key",
  },
  {
    id: "gemini-api-key-field",
    kind: "startup",
    description: "Gemini CLI API-key field prefilled from GEMINI_API_KEY (submits it)",
    question: /Enter Gemini API Key\b/i,
    detect: [/Existing API key detected \(GEMINI_API_KEY\)/i, /Press Enter to submit/i],
    options: [],
    input: true,
  },
  {
    id: "usage-limit",
    kind: "startup",
    description: "usage/rate limit reached (chooses to stop and wait)",
    question: /(?:Usage|Rate) limit reached|You've hit your (?:usage|rate) limit/i,
    options: [
      { role: "stop", label: /^Stop and wait\b/i },
      { role: "upgrade", label: /^(?:Upgrade|Switch to|Add funds|Use extra usage)\b/i },
    ],
    safeRole: "stop",
  },
  {
    id: "codex-sign-in",
    kind: "operator",
    description: "Codex sign-in choice (needs an operator: gc never signs in)",
    question: /Choose how you want to use Codex\.?|Sign in with ChatGPT to use Codex/i,
    options: [
      { role: "chatgpt", label: /^Sign in with ChatGPT\b/i },
      { role: "device-code", label: /^Sign in with Device Code\b/i },
      { role: "other-way", label: /^(?:Sign in another way|Provide your own API key)\b/i },
    ],
  },
  {
    id: "codex-sign-in-other",
    kind: "operator",
    description: 'Codex\'s "Sign in another way" choice (needs an operator)',
    question: /Sign in another way/i,
    // Its options, not the first menu's "3. Sign in another way / Use an API key or another…".
    detect: [/Use an OpenAI API key|Use Amazon Bedrock/i],
    options: [
      { role: "api-key", label: /^Use an OpenAI API key\b/i },
      { role: "bedrock", label: /^Use Amazon Bedrock\b/i },
    ],
    // Codex 0.171 drops an Enter pressed under 1 s after the Enter that opened this menu
    // (measured: 0.95 s lost, 1.0 s taken); a key field reached by Enter has no such delay.
    confirmAfterMs: 1_500,
  },
  {
    id: "codex-api-key-field",
    kind: "operator",
    description: "Codex API-key field (needs an operator: gc never types a key)",
    question: /Paste or type your API key\b/i,
    detect: [/Press enter to save/i],
    options: [],
    input: true,
    prompt: "Codex needs an API key typed into its key field (attach to the session to enter it)",
  },
  {
    id: "gemini-auth",
    kind: "operator",
    description: "Gemini CLI auth choice without an API key (needs an operator)",
    question: /How would you like to authenticate for this project\?/i,
    options: [
      { role: "google", label: /^(?:Sign in|Login) with Google\b/i },
      { role: "api-key", label: /^Use Gemini API Key\b/i },
      { role: "vertex", label: /^Vertex AI\b/i },
    ],
  },
  {
    id: "opencode-permission",
    kind: "approval",
    description: "opencode permission prompt (tool calls such as bash when its config says ask)",
    question: /△ Permission required/,
    options: [
      { role: "approve", label: /^Allow once$/ },
      { role: "approve-always", label: /^Allow always$/ },
      { role: "deny", label: /^Reject$/ },
    ],
    required: ["approve", "deny"],
    // opencode 1.18: "⇆ select  enter confirm"; the chosen option has a coloured background
    // only, and each new prompt starts on "Allow once"; Escape rejects.
    row: true,
    cursorOnFirst: true,
    optionKeys: { deny: "Escape" },
  },
  {
    id: "tool-approval",
    kind: "approval",
    description: "tool or edit approval prompt (Claude Code, Codex, Gemini CLI)",
    question:
      /Do you want to (?:proceed|make this edit to|create|allow)\b[^?]*\?|This command requires approval|Approve edits\?|Would you like to (?:run the following command|make the following edits)\?|Allow execution of\b[^?]*\?|Apply this change\?/i,
    options: [
      { role: "approve", label: /^(?:Yes(?:, proceed)?|Allow once)(?: \(y\))?$/i },
      {
        role: "approve-always",
        label:
          /^Yes, (?:and )?(?:don't|do not) ask again\b|^Yes, allow all\b|^Yes, and (?:allow|auto-accept)\b|^Allow (?:for this session|always)\b/i,
      },
      { role: "deny", label: /^No\b/i },
    ],
    required: ["approve", "deny"],
  },
];
