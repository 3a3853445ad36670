from services.webhook.cli import command

raise SystemExit(command())
