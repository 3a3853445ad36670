from services.webhook.cli import main

raise SystemExit(main())
