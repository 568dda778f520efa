"""Test corpus: user requests to a file-editing agent and the files each request names.

Written (by another hand) before `phasegraph.facts.request`'s rule was reworked, then used to
rework it: it is the corpus the rule was fitted on. `request_corpus_heldout` is one it never
saw.

Each entry is (request, files). ``files`` lists the file names / relative paths that the
request names as files (existing or to be created), in order of first appearance, each
once, written exactly as in the request (no surrounding quotes, no leading "./").
Technology names, dotted identifiers, domains, URLs, e-mail addresses, version numbers,
abbreviations, decimals, times, sizes, globs and similar look-alikes are NOT files.
"""

CORPUS: list[tuple[str, list[str]]] = [
    # --- simple creation / writing -------------------------------------------------
    (
        "Create a file called greeting.txt containing the words 'Good morning'.",
        ["greeting.txt"],
    ),
    (
        "Write a haiku about autumn to autumn_haiku.txt.",
        ["autumn_haiku.txt"],
    ),
    (
        "Put the current date in ISO format into today.txt.",
        ["today.txt"],
    ),
    (
        "Write the first 10 primes, comma-separated, to primes.txt.",
        ["primes.txt"],
    ),
    (
        "Write the value of pi to two decimals (3.14) into pi.txt.",
        ["pi.txt"],
    ),
    (
        "What's 17.5% of 240? Put the answer in percent.txt.",
        ["percent.txt"],
    ),
    (
        "How many U.S. states are there? Write just the number into state_tally.txt.",
        ["state_tally.txt"],
    ),
    (
        "Please write a short bio of Ada Lovelace (approx. 150 words) into bio.md.",
        ["bio.md"],
    ),
    (
        "I'd like a short Markdown cheatsheet for git rebase in git_rebase.md, please.",
        ["git_rebase.md"],
    ),
    (
        "Hi! Could you add a LICENSE file with the MIT license text, year 2024, "
        "holder Jane Doe?",
        ["LICENSE"],
    ),
    (
        "Create a file named TODO (no extension) listing the three open tasks "
        "from the issue tracker.",
        ["TODO"],
    ),
    (
        "Please create an empty __init__.py in the plugins package.",
        ["__init__.py"],
    ),
    (
        "Write a backup schedule (daily at 02.00, weekly on Sunday) into backup_plan.txt.",
        ["backup_plan.txt"],
    ),
    (
        "Draft an email to hr@company.co about the offsite and save it in "
        "offsite_email.txt.",
        ["offsite_email.txt"],
    ),
    (
        "Write a Q&A into faq.md: Q: Does it run on Windows? A: Yes, Windows 10+.",
        ["faq.md"],
    ),
    (
        "Our SLA is 99.95% uptime; state that clearly in SLA.md.",
        ["SLA.md"],
    ),
    # --- reading one file, writing another ------------------------------------------
    (
        "Please read inventory.csv and write the total quantity to inventory_qty.txt.",
        ["inventory.csv", "inventory_qty.txt"],
    ),
    (
        "Convert prices.csv to prices.json, keeping the sku and price columns only.",
        ["prices.csv", "prices.json"],
    ),
    (
        "Read logs/server.log and count how many lines contain ERROR; write the "
        "number to error_tally.txt.",
        ["logs/server.log", "error_tally.txt"],
    ),
    (
        "Summarize the README in three bullet points and save them to summary.md.",
        ["README", "summary.md"],
    ),
    (
        "Deduplicate the emails in contacts.csv (case-insensitive) and write the "
        "clean list to contacts_clean.csv.",
        ["contacts.csv", "contacts_clean.csv"],
    ),
    (
        "Convert temperatures in readings.csv from Fahrenheit to Celsius, rounding "
        "to 1 decimal, and save as readings_c.csv.",
        ["readings.csv", "readings_c.csv"],
    ),
    (
        "Sum the 'amount' column of expenses.csv and write the result with 2 "
        "decimals to expense_amount.txt.",
        ["expenses.csv", "expense_amount.txt"],
    ),
    (
        "Take the last 50 lines of logs/worker.log and save them to tail_worker.log.",
        ["logs/worker.log", "tail_worker.log"],
    ),
    (
        "Find the slowest endpoint in access.log (the last field is response time "
        "in ms) and write its path to slowest.txt.",
        ["access.log", "slowest.txt"],
    ),
    (
        "Convert the Markdown table in pricing.md to pricing.csv.",
        ["pricing.md", "pricing.csv"],
    ),
    (
        "Convert the JSON in payload.json to YAML in payload.yaml.",
        ["payload.json", "payload.yaml"],
    ),
    (
        "Extract the name field from each object in members.json into "
        "member_list.txt, one per line.",
        ["members.json", "member_list.txt"],
    ),
    (
        "Generate a CSV called inventory_report.csv with columns item,qty,location "
        "from stock.json.",
        ["inventory_report.csv", "stock.json"],
    ),
    (
        "Use pandas.read_csv to load measurements.csv and write the mean of each "
        "column into means.txt.",
        ["measurements.csv", "means.txt"],
    ),
    (
        "Extract all URLs from links.md (e.g. https://github.com/org/repo) into "
        "urls.txt, one per line.",
        ["links.md", "urls.txt"],
    ),
    (
        "Dr. Smith asked for the figures by 5 p.m. Put the key numbers from "
        "results.csv into figures.md.",
        ["results.csv", "figures.md"],
    ),
    (
        "Approx. 3.5% of rows in survey.csv have a blank age; fill them with the "
        "median age.",
        ["survey.csv"],
    ),
    (
        "Reformat the JSON in fixtures/sample_order.json with 2-space indentation, "
        "keys sorted.",
        ["fixtures/sample_order.json"],
    ),
    (
        "Turn the bullet list in ideas.md into a numbered list.",
        ["ideas.md"],
    ),
    (
        "Remove trailing whitespace from lyrics.md.",
        ["lyrics.md"],
    ),
    (
        "Append a line 'reviewed' to checklist.md.",
        ["checklist.md"],
    ),
    (
        'Add a bullet about the login bug fix to "release notes.md".',
        ["release notes.md"],
    ),
    (
        "Look at error.log: the trace mentions java.lang.NullPointerException in "
        "com.acme.Billing. Write what you think happened in diagnosis.md.",
        ["error.log", "diagnosis.md"],
    ),
    (
        "See the screenshot at ./docs/img/error.png and describe the error in "
        "error_description.md.",
        ["docs/img/error.png", "error_description.md"],
    ),
    (
        "Fetch https://example.org/guide/index.html and save it as page.html.",
        ["page.html"],
    ),
    (
        "Use the template in templates/email.html.j2 to render welcome.html for "
        "the user 'Sam'.",
        ["templates/email.html.j2", "welcome.html"],
    ),
    # --- three or more files -----------------------------------------------------
    (
        "Merge jan.csv, feb.csv and mar.csv into q1.csv, keeping a single header row.",
        ["jan.csv", "feb.csv", "mar.csv", "q1.csv"],
    ),
    (
        "Combine intro.txt and outro.txt into combined.txt, intro first.",
        ["intro.txt", "outro.txt", "combined.txt"],
    ),
    (
        "Count words in chapter1.md, chapter2.md, and chapter3.md and write a "
        "table to wordcounts.md.",
        ["chapter1.md", "chapter2.md", "chapter3.md", "wordcounts.md"],
    ),
    (
        "Compare old_config.yaml and new_config.yaml and list the changed keys in "
        "config_diff.md.",
        ["old_config.yaml", "new_config.yaml", "config_diff.md"],
    ),
    (
        "Rename the function getUser to fetchUser in api/client.ts, api/hooks.ts "
        "and pages/profile.tsx.",
        ["api/client.ts", "api/hooks.ts", "pages/profile.tsx"],
    ),
    (
        "Move the helpers from core.py into helpers.py and update the imports in "
        "cli.py and server.py.",
        ["core.py", "helpers.py", "cli.py", "server.py"],
    ),
    (
        "Refactor: split models.py into models/user.py and models/order.py, with "
        "models/__init__.py re-exporting both.",
        ["models.py", "models/user.py", "models/order.py", "models/__init__.py"],
    ),
    (
        "Write release notes for v2.0.1 in RELEASE_NOTES.md covering the fixes in "
        "auth.py and cache.py.",
        ["RELEASE_NOTES.md", "auth.py", "cache.py"],
    ),
    (
        "Rename config.yaml to config.example.yaml and add config.yaml to .gitignore.",
        ["config.yaml", "config.example.yaml", ".gitignore"],
    ),
    (
        "Rename Utils.java to StringHelpers.java and update the references in "
        "Main.java.",
        ["Utils.java", "StringHelpers.java", "Main.java"],
    ),
    (
        "Create schema.sql with a members table (id, email, created_at), seed.sql "
        "that inserts two rows, and a Makefile target `db` that loads both.",
        ["schema.sql", "seed.sql", "Makefile"],
    ),
    (
        "- read src/index.ts\n- move the router setup into src/router.ts\n"
        "- add a test in src/router.test.ts",
        ["src/index.ts", "src/router.ts", "src/router.test.ts"],
    ),
    (
        "Please update CHANGELOG.md, bump the version in Cargo.toml, and mention "
        "the new flag in docs/usage.md.",
        ["CHANGELOG.md", "Cargo.toml", "docs/usage.md"],
    ),
    # --- Python code changes -------------------------------------------------------
    (
        "In src/util/dates.py, add a function parse_iso(s) that returns a datetime; "
        "use datetime.fromisoformat.",
        ["src/util/dates.py"],
    ),
    (
        "Replace every call to np.linalg.norm in analysis/metrics.py with a helper "
        "named l2 defined in the same file.",
        ["analysis/metrics.py"],
    ),
    (
        "Sort the list in place with list.sort() instead of sorted() in ranking.py.",
        ["ranking.py"],
    ),
    (
        "I finished the parser.Then I broke the tests :( Can you fix "
        "tests/test_parser.py?",
        ["tests/test_parser.py"],
    ),
    (
        "Replace request.args.get('id') with a validated int in routes/items.py.",
        ["routes/items.py"],
    ),
    (
        "Translate the docstrings in geometry.py into English; leave the code unchanged.",
        ["geometry.py"],
    ),
    (
        "The function in tax.py computes 0.07 * amount; change the rate to 0.0725 "
        "and add a constant TAX_RATE.",
        ["tax.py"],
    ),
    (
        "Please check whether my regex in validators.py matches addresses like "
        "jane.doe@mail.co.uk.",
        ["validators.py"],
    ),
    (
        "Add an entry point in setup.py so that `mytool` calls mytool.cli:main.",
        ["setup.py"],
    ),
    (
        "Rewrite fetch_data in loader.py to use asyncio.gather instead of a for loop.",
        ["loader.py"],
    ),
    (
        "tests are failing since v1.4.0 :-( can you look at test_api.py?",
        ["test_api.py"],
    ),
    (
        "Add type hints to every function in parsing/tokenizer.py and parsing/lexer.py.",
        ["parsing/tokenizer.py", "parsing/lexer.py"],
    ),
    (
        "Use str.split and str.strip to clean the input in clean_input.py; don't "
        "use re.sub.",
        ["clean_input.py"],
    ),
    (
        "Add an HTTP timeout of 10s to every requests.get call in scraper.py.",
        ["scraper.py"],
    ),
    (
        "Move the API key out of settings.py into .env.local and read it with "
        "os.environ.get.",
        ["settings.py", ".env.local"],
    ),
    (
        "Write a migration in migrations/0003_add_index.py adding an index on "
        "orders.created_at.",
        ["migrations/0003_add_index.py"],
    ),
    (
        "Add a __main__ guard to convert.py so it can be imported without running.",
        ["convert.py"],
    ),
    (
        "In main.py, replace print statements with logging.info calls and call "
        "logging.basicConfig at startup.",
        ["main.py"],
    ),
    (
        "Write unit tests in test_money.py for Money.add and Money.sub from money.py.",
        ["test_money.py", "money.py"],
    ),
    (
        "Make the function in fibonacci.py iterative.Then add a docstring.",
        ["fibonacci.py"],
    ),
    (
        "Replace the magic number 86400 in scheduler.py with SECONDS_PER_DAY, and "
        "do the same in cron_jobs.py.",
        ["scheduler.py", "cron_jobs.py"],
    ),
    (
        "Bump __version__ in mypkg/__init__.py from 1.2.0 to 1.3.0.",
        ["mypkg/__init__.py"],
    ),
    (
        "Add tests for slugify in tests/test_text.py; the function lives in "
        "text/slug.py.",
        ["tests/test_text.py", "text/slug.py"],
    ),
    (
        "In worker.py, rename the logger 'jobs.worker' to 'queue.worker'.",
        ["worker.py"],
    ),
    (
        "Please add Jr. and Sr. as allowed suffixes in name_parser.py.",
        ["name_parser.py"],
    ),
    (
        "self.config.debug is always True in service.py, even when the flag is "
        "off... why? Fix it if it's a bug.",
        ["service.py"],
    ),
    (
        "Could you make `retry.py` back off exponentially (0.5s, 1s, 2s, ...) "
        "instead of sleeping 1.0 every time?",
        ["retry.py"],
    ),
    # --- JS / TS -------------------------------------------------------------------
    (
        "Our Node.js service reads its port from server.js; change the default "
        "from 3000 to 8080.",
        ["server.js"],
    ),
    (
        "Upgrade the project from Vue.js 2 to Vue 3 in frontend/main.js and "
        "frontend/App.vue.",
        ["frontend/main.js", "frontend/App.vue"],
    ),
    (
        "Add a D3.js bar chart to dashboard.html using the numbers in metrics.json.",
        ["dashboard.html", "metrics.json"],
    ),
    (
        "Migrate the pages from Next.js 13 to 14; start with next.config.js.",
        ["next.config.js"],
    ),
    (
        "In index.js, replace console.log with logger.info everywhere.",
        ["index.js"],
    ),
    (
        "Set the Vite dev server port to 5173 in vite.config.ts.",
        ["vite.config.ts"],
    ),
    (
        "In webpack.config.js, add an alias '@' pointing at the src directory.",
        ["webpack.config.js"],
    ),
    (
        "The version string says 3.2.1-beta... bump it to 3.2.1 in src/version.ts.",
        ["src/version.ts"],
    ),
    (
        "Regenerate yarn.lock after adding lodash 4.17.21 to the dependencies.",
        ["yarn.lock"],
    ),
    (
        "Why does Math.round(2.5) return 3 in JavaScript but round(2.5) return 2 "
        "in Python? Answer in rounding.md.",
        ["rounding.md"],
    ),
    (
        "Use a .npmrc to point at our private registry at "
        "https://npm.internal.example.com/.",
        [".npmrc"],
    ),
    (
        "In `components/Header.jsx`, swap the window.location.href redirect for "
        "router.push.",
        ["components/Header.jsx"],
    ),
    # --- Go / Rust / Java / C# -----------------------------------------------------
    (
        "In handlers.go, return 404 instead of 500 when the user is not found.",
        ["handlers.go"],
    ),
    (
        "In main.go, handle the error returned by os.Open instead of ignoring it.",
        ["main.go"],
    ),
    (
        "Update go.mod to Go 1.22 and run go mod tidy.",
        ["go.mod"],
    ),
    (
        "Add a unit test for parse_config in src/config.rs, inside the existing "
        "tests module.",
        ["src/config.rs"],
    ),
    (
        "Is it better to use Rust's Vec::with_capacity here? Look at src/buffer.rs "
        "and tell me.",
        ["src/buffer.rs"],
    ),
    (
        "Implement Display for the Point struct in src/geometry.rs.",
        ["src/geometry.rs"],
    ),
    (
        "Rename the variable tmp to buffer in stream.rs and stream_test.rs.",
        ["stream.rs", "stream_test.rs"],
    ),
    (
        "Write 'hello, world' in Rust to src/main.rs and add a [dependencies] "
        "section to Cargo.toml.",
        ["src/main.rs", "Cargo.toml"],
    ),
    (
        "Bump the version in Cargo.toml from 0.3.1 to 0.4.0 and add a line to "
        "CHANGELOG.md.",
        ["Cargo.toml", "CHANGELOG.md"],
    ),
    (
        "Our ASP.NET API needs a health check; add it to Program.cs.",
        ["Program.cs"],
    ),
    (
        "Change the Java package from com.acme.billing to com.acme.payments in "
        "Invoice.java.",
        ["Invoice.java"],
    ),
    (
        "Write 'DONE' into status.txt once you've verified build.gradle compiles "
        "with Gradle 8.5.",
        ["status.txt", "build.gradle"],
    ),
    # --- config files --------------------------------------------------------------
    (
        "In the [database] section of db.ini, change host to db.internal.example.com.",
        ["db.ini"],
    ),
    (
        "Set DEBUG=false in .env.local and .env.production.",
        [".env.local", ".env.production"],
    ),
    (
        "Set the timeout to 2.5 seconds in client/config.yaml (it's currently 0.5).",
        ["client/config.yaml"],
    ),
    (
        "Uploads over 1.5GB fail. Raise client_max_body_size in nginx.conf to 2GB.",
        ["nginx.conf"],
    ),
    (
        "Pin requests to 2.31.0 in requirements.txt.",
        ["requirements.txt"],
    ),
    (
        "Upgrade Django from 4.2 to 5.0 in requirements/base.txt.",
        ["requirements/base.txt"],
    ),
    (
        "Set line-length = 100 in ruff.toml.",
        ["ruff.toml"],
    ),
    (
        "Make docker-compose.yml expose port 5432 for the postgres service.",
        ["docker-compose.yml"],
    ),
    (
        "Fix the YAML indentation in k8s/deployment.yaml; the containers block is "
        "off by two spaces.",
        ["k8s/deployment.yaml"],
    ),
    (
        "Our CI uses .github/workflows/ci.yml; add a job that runs on Python 3.12 too.",
        [".github/workflows/ci.yml"],
    ),
    (
        "Create a .editorconfig with 4-space indentation for *.py and 2 spaces "
        "for *.yml.",
        [".editorconfig"],
    ),
    (
        "Create a .gitattributes that marks *.png as binary.",
        [".gitattributes"],
    ),
    (
        "Add __pycache__/ and dist/ to .gitignore.",
        [".gitignore"],
    ),
    (
        "Our site example.com is slow; add caching headers in .htaccess.",
        [".htaccess"],
    ),
    (
        "Check tsconfig.base.json: is strict mode on? Reply in chat.",
        ["tsconfig.base.json"],
    ),
    (
        "Set the log level to WARNING in logging.conf, and make the log file path "
        "/var/log/myapp/app-server.log.",
        ["logging.conf", "/var/log/myapp/app-server.log"],
    ),
    (
        "Add a line mapping 127.0.0.1 to dev.local in /etc/hosts.",
        ["/etc/hosts"],
    ),
    (
        "Append today's todo items to ~/todo.md.",
        ["~/todo.md"],
    ),
    (
        "Add 'export PATH=$HOME/bin:$PATH' to ~/.bashrc.",
        ["~/.bashrc"],
    ),
    (
        "In \"settings/local.toml\" set cache_ttl to 0.25 and retries to 3, "
        "then copy the same keys into \"settings/prod.toml\".",
        ["settings/local.toml", "settings/prod.toml"],
    ),
    # --- Docker / Make / shell ---------------------------------------------------------
    (
        "Write a Dockerfile for a Python 3.11 service that runs main.py with gunicorn.",
        ["Dockerfile", "main.py"],
    ),
    (
        "The Makefile's test target is broken; fix it so `make test` runs pytest.",
        ["Makefile"],
    ),
    (
        "Add a `lint` target to the Makefile and a hook in .pre-commit-config.yaml.",
        ["Makefile", ".pre-commit-config.yaml"],
    ),
    (
        "Add a HEALTHCHECK to the Dockerfile and document it in docs/deploy.md.",
        ["Dockerfile", "docs/deploy.md"],
    ),
    (
        "The Procfile should start web with gunicorn wsgi:application; please update it.",
        ["Procfile"],
    ),
    (
        "Run ./scripts/run.sh and paste its output into run_output.txt.",
        ["scripts/run.sh", "run_output.txt"],
    ),
    (
        "Write a bash script cleanup.sh that removes files older than 7 days from "
        "/var/tmp/myapp.",
        ["cleanup.sh"],
    ),
    (
        "Add a cron line to crontab.txt that runs backup.sh at 3.15 AM every day.",
        ["crontab.txt", "backup.sh"],
    ),
    # --- docs / Markdown --------------------------------------------------------------
    (
        "Fix the typo in docs/intro.md: 'recieve' should be 'receive'.",
        ["docs/intro.md"],
    ),
    (
        "Please copy-edit chapter3.md, e.g. fix comma splices, passive voice, etc.",
        ["chapter3.md"],
    ),
    (
        "What is the difference between os.path.join and pathlib? Put a short "
        "answer in explain.md.",
        ["explain.md"],
    ),
    (
        "The meeting is at 10.30 tomorrow; add that to agenda.md under 'Schedule'.",
        ["agenda.md"],
    ),
    (
        "Write a short incident note to incident.md and mention that questions "
        "go to ops@example.com.",
        ["incident.md"],
    ),
    (
        "Create CONTRIBUTING.md that explains how to run tests (pytest -q) and "
        "lint (ruff check .).",
        ["CONTRIBUTING.md"],
    ),
    (
        "Add a section 'Troubleshooting' to docs/setup.md mentioning that Node.js "
        "18+ is required.",
        ["docs/setup.md"],
    ),
    (
        "Add a 'Known issues' section to README.md: the player crashes on files "
        ">2.0GB, e.g. large videos.",
        ["README.md"],
    ),
    (
        "Update the copyright year in LICENSE.txt and NOTICE.",
        ["LICENSE.txt", "NOTICE"],
    ),
    (
        "What changed between v1.9 and v2.0? Summarize it from CHANGELOG.md into "
        "whats_new.md.",
        ["CHANGELOG.md", "whats_new.md"],
    ),
    (
        "Fix the broken link to www.rust-lang.org in docs/links.md.",
        ["docs/links.md"],
    ),
    (
        "Review the critical path section of roadmap.md and tighten the wording; "
        "keep the backup schedule part as is.",
        ["roadmap.md"],
    ),
    (
        "Thanks for the update.Could you now also add a table of contents to "
        "GUIDE.md?",
        ["GUIDE.md"],
    ),
    # --- no files at all ---------------------------------------------------------------
    (
        "Can you explain what a race condition is? No need to write any files.",
        [],
    ),
    (
        "Is https://docs.python.org/3/library/os.path.html the right page for "
        "os.path.splitext? Just answer in chat.",
        [],
    ),
    (
        "What does self.config.debug control in this codebase? Answer in chat please.",
        [],
    ),
    (
        "Hmm... the build is slow. Any ideas?",
        [],
    ),
    (
        "Review the critical path in the build pipeline and suggest improvements; "
        "no file needed.",
        [],
    ),
    (
        "Explain the difference between TCP and UDP, i.e., when would I choose each?",
        [],
    ),
    (
        "Delete all *.tmp files in the build folder.",
        [],
    ),
    (
        "Could you list the largest functions in the codebase? Just reply here.",
        [],
    ),
    (
        "Thanks! That worked perfectly.",
        [],
    ),
    (
        "Tell me what the project does; I'm new here.",
        [],
    ),
    (
        "Hey, quick one: what's the default port for PostgreSQL?",
        [],
    ),
    (
        "Proofread every Markdown file in the docs folder and fix obvious typos.",
        [],
    ),
    (
        "Explain what this means: 'ModuleNotFoundError: No module named yaml'. "
        "No file changes.",
        [],
    ),
    (
        "What are the pros and cons of using Next.js vs. plain React?",
        [],
    ),
    (
        "Can you tidy up the code? It's getting messy.",
        [],
    ),
    (
        "Lint the code with flake8 and fix whatever it complains about.",
        [],
    ),
    (
        "Rename every .jpeg extension to .jpg in the images folder.",
        [],
    ),
    (
        "Hey, what does the -rf flag in rm -rf do? Just curious.",
        [],
    ),
    (
        "Just checking in... are you there?",
        [],
    ),
    (
        "Which is faster in Python 3.12, dict.get or a try/except KeyError?",
        [],
    ),
    (
        "Can you walk me through how the auth flow works in this repo, step by step?",
        [],
    ),
    (
        "Please run the test suite and tell me how many tests fail.",
        [],
    ),
    (
        "Is ASP.NET Core or Express.js a better fit for a 1.5GB/day log ingester? "
        "Don't change anything, just advise.",
        [],
    ),
    (
        "Set up a backup schedule for the database: nightly at 23.45, keep 7 copies. "
        "Just describe it, don't write anything yet.",
        [],
    ),
    (
        "Can np.linalg.norm handle complex arrays? Quick yes or no :)",
        [],
    ),
]
