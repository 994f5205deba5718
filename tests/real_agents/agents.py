"""The five agent CLIs: configuration in a temp home pointed at the fake model, and what their
screens look like (Claude Code 2.1.197, Codex 0.171.0, OpenCode 1.18.33, Pi 0.73.1, Gemini CLI
0.61.0; base-URL mechanisms and screens as in tests/fixtures/real-agents/).

Each ``setup`` writes only under ``session.home``/``session.work`` and returns the environment
the daemon (hence the pane) gets; signaltty's hooks/plugin are added by the daemon at spawn.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.real_agents.harness import Agent

if TYPE_CHECKING:
    from tests.real_agents.harness import Session

ENTER, ESC, DOWN, RIGHT = b"\r", b"\x1b", b"\x1b[B", b"\x1b[C"


def _xdg(session: Session) -> dict[str, str]:
    h = session.home
    return {"XDG_CONFIG_HOME": str(h / ".config"), "XDG_DATA_HOME": str(h / ".local/share"),
            "XDG_CACHE_HOME": str(h / ".cache"), "XDG_STATE_HOME": str(h / ".local/state")}


# ---------------------------------------------------------------------- Claude Code

CLAUDE_KEY = "sk-ant-mock-" + "0" * 30
CLAUDE_REMINDER_S = 15.0
NOTIFICATIONS = "claude-notifications.jsonl"


def setup_claude(session: Session) -> dict[str, str]:
    (session.home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.197", "numStartups": 5, "theme": "dark",
        "autoUpdates": False,
        # Claude's idle reminder (Notification idle_prompt) comes this long after a turn: long
        # enough never to land between two steps, short enough for the reminder step
        "messageIdleNotifThresholdMs": int(CLAUDE_REMINDER_S * 1000),
        "customApiKeyResponses": {"approved": [CLAUDE_KEY[-20:]], "rejected": []},
        "projects": {str(session.work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                                         "projectOnboardingSeenCount": 1, "allowedTools": []}},
    }))
    # The user's own Notification hook, next to the ones signaltty adds at spawn: it tells the
    # test when Claude sent a notification, whatever signaltty made of it.
    log = session.root / NOTIFICATIONS
    settings = session.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Notification": [{"matcher": "", "hooks": [
        {"type": "command", "command": f"cat >> '{log}'; echo >> '{log}'", "timeout": 10}]}]}}))
    return {"ANTHROPIC_BASE_URL": session.model.url, "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}


CLAUDE = Agent(
    name="claude", binary="claude", args=[], setup=setup_claude,
    idle=r"^\s*\? for shortcuts",
    working=r"esc to interrupt",
    dialog=r"Do you want to proceed\?(?s:.*)❯ 1\. Yes",
    allow_keys=[ENTER],
    deny_keys=[b"3"],
    quit_keys=[b"/exit", ENTER],
    # Esc may put the prompt back into the input box (then Ctrl+U empties it)
    interrupted=r"Interrupted · What should Claude do instead\?|^❯\s*slow-e1\s*$(?=\n─)",
    clear_after_esc=b"\x15",
)


# ---------------------------------------------------------------------- Codex


def setup_codex(session: Session) -> dict[str, str]:
    codex_home = session.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "on-request"\n'
        'sandbox_mode = "workspace-write"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.mock]\nname = "Mock"\nbase_url = "{session.model.url}/v1"\nenv_key = "MOCK_API_KEY"\n'
        'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n'
        f'[projects."{session.work}"]\ntrust_level = "trusted"\n\n[analytics]\nenabled = false\n')
    return {"MOCK_API_KEY": "mock-key"}


CODEX = Agent(
    name="codex", binary="codex", args=[], setup=setup_codex,
    idle=r"^› (?!\d\.)",
    working=r"esc to interrupt",
    dialog=r"Would you like to run the following command\?",
    allow_keys=[b"y"],
    deny_keys=[ESC],
    quit_keys=[b"/quit", ENTER],
    interrupted=r"Conversation interrupted",
)


# ---------------------------------------------------------------------- OpenCode


def setup_opencode(session: Session) -> dict[str, str]:
    conf = session.home / ".config" / "opencode"
    conf.mkdir(parents=True)
    (conf / "opencode.json").write_text(json.dumps({
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                              "options": {"baseURL": f"{session.model.url}/v1", "apiKey": "mock-key"},
                              "models": {"mock-model": {"name": "Mock Model", "tool_call": True,
                                                        "limit": {"context": 128000, "output": 4096}}}}},
        "enabled_providers": ["mock"], "model": "mock/mock-model", "small_model": "mock/mock-model",
        "autoupdate": False, "share": "disabled", "permission": {"bash": "ask", "edit": "ask"},
    }))
    # OpenCode npm-installs @opencode-ai/plugin into a config dir that has plugins (~20 s from
    # the registry); offline it gives up at once and loads our plugin, which imports nothing.
    return {**_xdg(session), "npm_config_offline": "true", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1"}


OPENCODE = Agent(
    name="opencode", binary="opencode", args=[], setup=setup_opencode,
    idle=r"ctrl\+p commands",
    working=r"esc (again to )?interrupt",
    dialog=r"Permission required(?s:.*)Allow once",
    allow_keys=[ENTER],
    deny_keys=[RIGHT, RIGHT, ENTER],
    quit_keys=[b"/exit", ENTER],
    interrupted=r"ctrl\+p commands",
    esc_keys=[ESC, ESC],  # the first Esc only arms "esc again to interrupt"
)


# ---------------------------------------------------------------------- Pi

# Pi has no permission prompts of its own: this extension (the user's own, not signaltty's)
# asks before a shell command that writes a marker file, as the research harness did.
PI_CONFIRM_EXTENSION = """\
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    const command = String((event.input && event.input.command) || "");
    if (event.toolName !== "bash" || !command.includes("touch ")) return undefined;
    const ok = await ctx.ui.confirm("Permission required", `Allow: ${command}?`);
    return ok ? undefined : { block: true, reason: "Denied by the user" };
  });
}
"""


def setup_pi(session: Session) -> dict[str, str]:
    agent_dir = session.home / ".pi" / "agent"
    (agent_dir / "extensions").mkdir(parents=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"mock": {
        "baseUrl": f"{session.model.url}/v1", "api": "openai-completions", "apiKey": "mock-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "mock-model", "reasoning": False, "input": ["text"], "contextWindow": 128000,
                    "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}))
    (agent_dir / "extensions" / "confirm-writes.ts").write_text(PI_CONFIRM_EXTENSION)
    # no update check, telemetry or fd/ripgrep download from GitHub at start-up
    return {"PI_OFFLINE": "1"}


PI = Agent(
    name="pi", binary="pi", args=["--provider", "mock", "--model", "mock-model"], setup=setup_pi,
    idle=r"%/128k",
    working=r"Working\.\.\.",
    dialog=r"Allow: touch (?s:.*)enter select",
    allow_keys=[ENTER],
    deny_keys=[DOWN, ENTER],
    quit_keys=[b"\x04"],
    interrupted=r"%/128k",
)


# ---------------------------------------------------------------------- Gemini CLI


def setup_gemini(session: Session) -> dict[str, str]:
    conf = session.home / ".gemini"
    conf.mkdir()
    (conf / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True}, "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False}, "ide": {"enabled": False}, "model": {"name": "gemini-2.5-flash"},
    }))
    return {"GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": session.model.url,
            "GEMINI_CLI_NO_RELAUNCH": "true"}


GEMINI = Agent(
    name="gemini", binary="gemini", args=[], setup=setup_gemini,
    idle=r"Type your message",
    working=r"esc to cancel",
    dialog=r"Allow execution of",
    allow_keys=[ENTER],
    deny_keys=[ESC],
    quit_keys=[b"/quit", ENTER],
    interrupted=r"Type your message",
    deny_cancels_turn=True,  # "3. No, suggest changes (esc)" → "Request cancelled."
    empty_input=r"Type your message or @path",
)

AGENTS = {a.name: a for a in (CLAUDE, CODEX, OPENCODE, PI, GEMINI)}
