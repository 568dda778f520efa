"""Held-out requests, each with the files a careful reader says it names.

Written by another hand after `phasegraph.facts.request`'s rule was reworked on
`request_corpus`, and measured once, never looked at to change the rule.
"""

HELDOUT = [
    (
        'rename utils_old.js to helpers.js and update the imports in src/index.ts'
        ,
        ['utils_old.js', 'helpers.js', 'src/index.ts'],
    ),
    (
        'Can you add a .gitignore that ignores node_modules and dist?'
        ,
        ['.gitignore'],
    ),
    (
        'what does the --frozen-lockfile flag do in yarn?'
        ,
        [],
    ),
    (
        "In notebooks/churn_analysis.ipynb the cell with df.groupby('region') is "
        'super slow. Can you rewrite it with pandas 2.x idioms?'
        ,
        ['notebooks/churn_analysis.ipynb'],
    ),
    (
        'fix typo in README'
        ,
        ['README'],
    ),
    (
        'the Makefile target `test` should run pytest with -x, pls change'
        ,
        ['Makefile'],
    ),
    (
        'Translate the missing strings in locales/de.json using locales/en.json as '
        'the source.'
        ,
        ['locales/de.json', 'locales/en.json'],
    ),
    (
        "update messages.po for french, msgid 'Save changes' has no msgstr"
        ,
        ['messages.po'],
    ),
    (
        'add a GET /invoices/{id} endpoint to openapi.yaml with a 404 response'
        ,
        ['openapi.yaml'],
    ),
    (
        'Write a migration 0042_add_index_on_email.sql that adds an index on '
        'customers.email'
        ,
        ['0042_add_index_on_email.sql'],
    ),
    (
        'terraform plan fails: Error: Unsupported argument in main.tf line 14. '
        'variables.tf defines region but not zone'
        ,
        ['main.tf', 'variables.tf'],
    ),
    (
        'scale the replicas in k8s/deployment.yaml to 3 and bump the image tag to '
        'v3.2.1'
        ,
        ['k8s/deployment.yaml'],
    ),
    (
        'write a bash script backup.sh that tars uploads/ into uploads.tar.gz and '
        'copies it to /mnt/backup'
        ,
        ['backup.sh', 'uploads.tar.gz'],
    ),
    (
        'R question: in analysis/regression.R my lm() call drops NA rows silently, '
        'how do i see how many?'
        ,
        ['analysis/regression.R'],
    ),
    (
        '.prettierrc uses tabs but .editorconfig says spaces, make them consistent '
        '(spaces, width 2)'
        ,
        ['.prettierrc', '.editorconfig'],
    ),
    (
        'how do I make eslint ignore generated files?'
        ,
        [],
    ),
    (
        "Hi! I'm working on a small Next.js app and the page at pages/about.tsx "
        "doesn't pick up the styles from styles/About.module.css. I've checked "
        'next.config.js and nothing weird there... any idea?'
        ,
        ['pages/about.tsx', 'styles/About.module.css', 'next.config.js'],
    ),
    (
        "please convert expenses_2023.xlsx to csv, keep only the sheet 'Q4'"
        ,
        ['expenses_2023.xlsx'],
    ),
    (
        'merge jan.csv, feb.csv and mar.csv into q1_ledger.csv, dedupe by '
        'transaction_id'
        ,
        ['jan.csv', 'feb.csv', 'mar.csv', 'q1_ledger.csv'],
    ),
    (
        "main.c wont compile for the STM32, error in hal_gpio.h: 'GPIO_PIN_13' "
        'undeclared'
        ,
        ['main.c', 'hal_gpio.h'],
    ),
    (
        'For my Skyrim mod, edit Data/SKSE/Plugins/MyMod.ini to set fDamageMult = '
        '0.75'
        ,
        ['Data/SKSE/Plugins/MyMod.ini'],
    ),
    (
        "the bibliography in paper.tex isn't showing up, refs are in references.bib. "
        'Using biber.'
        ,
        ['paper.tex', 'references.bib'],
    ),
    (
        'Explain the difference between useEffect and useLayoutEffect.'
        ,
        [],
    ),
    (
        'the CI is red. .github/workflows/ci.yml runs on node 20.x but .nvmrc says 18'
        ,
        ['.github/workflows/ci.yml', '.nvmrc'],
    ),
    (
        'create a Dockerfile for the flask service, python 3.12-slim base, expose '
        '8080'
        ,
        ['Dockerfile'],
    ),
    (
        'add an MIT LICENSE file with year 2024 and the name Acme Corp'
        ,
        ['LICENSE'],
    ),
    (
        'can u check .env.production, I think DATABASE_URL points to api.example.org '
        'instead of db.example.org'
        ,
        ['.env.production'],
    ),
    (
        'Should I email this to support@acme.io? no wait, just write it into '
        'summary_for_support.md'
        ,
        ['summary_for_support.md'],
    ),
    (
        'in server.js replace fs.readFileSync with the promise version, and the '
        'JSON.parse call should catch errors'
        ,
        ['server.js'],
    ),
    (
        'my test.spec.ts fails because Array.prototype.map skips holes in sparse '
        'arrays?? not sure'
        ,
        ['test.spec.ts'],
    ),
    (
        'load app.config.prod.json in config_loader.py with json.loads and fall back '
        "to app.config.dev.json if it's missing"
        ,
        ['app.config.prod.json', 'config_loader.py', 'app.config.dev.json'],
    ),
    (
        "extract archive.tar.gz into vendor/ and list what's inside"
        ,
        ['archive.tar.gz'],
    ),
    (
        'Done with the parser.Next, please refactor lexer.py so tokens are '
        'dataclasses'
        ,
        ['lexer.py'],
    ),
    (
        'The release meeting is at 14.30 so pls hurry... update CHANGELOG.md with the '
        'v2.4.0 notes'
        ,
        ['CHANGELOG.md'],
    ),
    (
        "what's the time complexity of heapq.nsmallest vs. sorted()[:k]?"
        ,
        [],
    ),
    (
        "i18n: add the key 'checkout.title' to src/i18n/es.json and "
        'src/i18n/pt-BR.json'
        ,
        ['src/i18n/es.json', 'src/i18n/pt-BR.json'],
    ),
    (
        'Socket.IO client in public/chat.js disconnects after 60s, the server is in '
        'realtime/server.ts'
        ,
        ['public/chat.js', 'realtime/server.ts'],
    ),
    (
        'use Chart.js to plot monthly_revenue.csv on dashboard.html as a bar chart'
        ,
        ['monthly_revenue.csv', 'dashboard.html'],
    ),
    (
        'Three.js scene in scene.js renders all black, the model is assets/ship.glb'
        ,
        ['scene.js', 'assets/ship.glb'],
    ),
    (
        'In my ASP.NET Core project the connection string in '
        'appsettings.Development.json is ignored, Program.cs uses '
        'builder.Configuration'
        ,
        ['appsettings.Development.json', 'Program.cs'],
    ),
    (
        'how do i restart nginx after editing /etc/nginx/nginx.conf'
        ,
        [],
    ),
    (
        'copy the aliases from ~/.bashrc into scripts/aliases.sh so the team can '
        'source it'
        ,
        ['scripts/aliases.sh'],
    ),
    (
        'delete all *.log files in logs/'
        ,
        [],
    ),
    (
        'convert every .csv file in exports/ to parquet'
        ,
        [],
    ),
    (
        'Go to https://docs.python.org/3/library/csv.html and tell me if DictReader '
        'handles a BOM'
        ,
        [],
    ),
    (
        'pls write unit tests for invoice_calc.py in tests/test_invoice_calc.py'
        ,
        ['invoice_calc.py', 'tests/test_invoice_calc.py'],
    ),
    (
        'Kubernetes: service.yaml and ingress.yaml both define port 80, the ingress '
        'host is shop.example.com. also add a configmap.yaml'
        ,
        ['service.yaml', 'ingress.yaml', 'configmap.yaml'],
    ),
    (
        'bump the version in Cargo.toml to 0.9.1'
        ,
        ['Cargo.toml'],
    ),
    (
        'can you explain what `git rebase -i HEAD~3` does'
        ,
        [],
    ),
    (
        'Android app crashes on start, see MainActivity.kt and AndroidManifest.xml'
        ,
        ['MainActivity.kt', 'AndroidManifest.xml'],
    ),
    (
        'iOS build rejected: Info.plist needs NSCameraUsageDescription'
        ,
        ['Info.plist'],
    ),
    (
        'flutter: add http: ^1.2.0 to pubspec.yaml'
        ,
        ['pubspec.yaml'],
    ),
    (
        'embedded: uart.c overflows its buffer at baud=115200, the ring buffer in '
        'ringbuf.h is only 64 bytes'
        ,
        ['uart.c', 'ringbuf.h'],
    ),
    (
        'linker script stm32f4.ld puts .data in the wrong memory region'
        ,
        ['stm32f4.ld'],
    ),
    (
        'the fabric.mod.json in my minecraft mod has the wrong entrypoint, main class '
        'is com.example.ExampleMod'
        ,
        ['fabric.mod.json'],
    ),
    (
        'Add a new item texture at assets/mymod/textures/item/ruby.png and register '
        'it in ModItems.java'
        ,
        ['assets/mymod/textures/item/ruby.png', 'ModItems.java'],
    ),
    (
        'move the figure in sections/results.tex to the top of the page and fix the '
        'caption. the image is figs/roc_curve.pdf'
        ,
        ['sections/results.tex', 'figs/roc_curve.pdf'],
    ),
    (
        'How do I get natbib to use author-year style?'
        ,
        [],
    ),
    (
        'my thesis main.tex includes chapters/intro.tex, chapters/methods.tex and '
        'chapters/conclusion.tex - compile errors only in methods'
        ,
        ['main.tex', 'chapters/intro.tex', 'chapters/methods.tex', 'chapters/conclusion.tex'],
    ),
    (
        'reconcile bank_statement_march.csv against ledger.csv, output mismatches to '
        'mismatches.csv'
        ,
        ['bank_statement_march.csv', 'ledger.csv', 'mismatches.csv'],
    ),
    (
        "what's 21% VAT on 1234.50?"
        ,
        [],
    ),
    (
        "the export from QuickBooks is 'Invoices Export 2024.csv' and the amounts use "
        'comma decimals, can you fix that'
        ,
        ['Invoices Export 2024.csv'],
    ),
    (
        'open "budget final v2.xlsx" and sum column D'
        ,
        ['budget final v2.xlsx'],
    ),
    (
        './run_tests.sh is not executable, fix it'
        ,
        ['run_tests.sh'],
    ),
    (
        'Look at ./src/main.rs, the borrow checker complains at line 88'
        ,
        ['src/main.rs'],
    ),
    (
        'tsconfig.json: enable strict mode and fix the resulting errors in '
        'src/api/client.ts'
        ,
        ['tsconfig.json', 'src/api/client.ts'],
    ),
    (
        'add a husky pre-commit hook that runs lint-staged'
        ,
        [],
    ),
    (
        '.eslintrc.cjs extends airbnb, switch it to eslint:recommended + prettier'
        ,
        ['.eslintrc.cjs'],
    ),
    (
        'vscode ignores our .editorconfig, should I add the plugin to '
        '.vscode/extensions.json?'
        ,
        ['.editorconfig', '.vscode/extensions.json'],
    ),
    (
        'move the helper funcs from misc.py into text_utils.py pls and delete misc.py '
        'after'
        ,
        ['misc.py', 'text_utils.py'],
    ),
    (
        'Hello, I have problem with file database.yml, the rails not connect to '
        'postgres. Please can you look and say me what is wrong?'
        ,
        ['database.yml'],
    ),
    (
        'ok so basically i was trying to get the docker compose thing going and '
        'docker-compose.yml has the db service but the web one keeps saying '
        'connection refused on 5432 and i dont know if its the .env.local or what, '
        'can you take a look'
        ,
        ['docker-compose.yml', '.env.local'],
    ),
    (
        '- rename old_report.py -> monthly_report.py\n- update the imports in '
        'cli.py\n- add a test'
        ,
        ['old_report.py', 'monthly_report.py', 'cli.py'],
    ),
    (
        'Write a short poem about autumn.'
        ,
        [],
    ),
    (
        'Summarize what we discussed about caching strategies so far.'
        ,
        [],
    ),
    (
        'which is faster for 10M rows: polars or pandas?'
        ,
        [],
    ),
    (
        'generate a requirements.txt from the imports in train.py and evaluate.py'
        ,
        ['requirements.txt', 'train.py', 'evaluate.py'],
    ),
    (
        "pandas.read_csv('raw/customers_2024.csv', sep=';') gives me only one column, "
        'why?'
        ,
        ['raw/customers_2024.csv'],
    ),
    (
        'plot the loss curve from training_log.jsonl with matplotlib and save it as '
        'loss.png'
        ,
        ['training_log.jsonl', 'loss.png'],
    ),
    (
        'write a systemd unit file myapp.service that runs gunicorn on port 8000'
        ,
        ['myapp.service'],
    ),
    (
        'crontab entry to run cleanup.sh every day at 03:15'
        ,
        ['cleanup.sh'],
    ),
    (
        'check disk usage and tell me which dirs are the biggest'
        ,
        [],
    ),
    (
        'logrotate config for our service please, save it as deploy/logrotate.conf'
        ,
        ['deploy/logrotate.conf'],
    ),
    (
        "ansible: playbook.yml fails on the 'install packages' task, the inventory is "
        'hosts.ini'
        ,
        ['playbook.yml', 'hosts.ini'],
    ),
    (
        'nginx reverse proxy for api.example.org -> localhost:3000, put it in '
        'nginx/api.conf'
        ,
        ['nginx/api.conf'],
    ),
    (
        'Terraform: split main.tf into network.tf, compute.tf and outputs.tf'
        ,
        ['main.tf', 'network.tf', 'compute.tf', 'outputs.tf'],
    ),
    (
        'terraform.tfvars has the prod values, create staging.tfvars with smaller '
        'instance types (t3.small vs. t3.large)'
        ,
        ['terraform.tfvars', 'staging.tfvars'],
    ),
    (
        'helm chart values.yaml: set resources.limits.memory to 512Mi'
        ,
        ['values.yaml'],
    ),
    (
        'kubectl apply -f manifests/ complains about apiVersion in cronjob.yaml'
        ,
        ['cronjob.yaml'],
    ),
    (
        'migrations/2024_05_01_create_payments.sql and '
        'migrations/2024_05_02_add_fk.sql run in the wrong order'
        ,
        ['migrations/2024_05_01_create_payments.sql', 'migrations/2024_05_02_add_fk.sql'],
    ),
    (
        'write a SQL query for the top 10 customers by revenue, no file needed, just '
        'show me'
        ,
        [],
    ),
    (
        'schema.prisma: add a Post model with a relation to User'
        ,
        ['schema.prisma'],
    ),
    (
        'in the alembic versions folder, edit 3f2a1b_add_status.py so downgrade drops '
        'the column'
        ,
        ['3f2a1b_add_status.py'],
    ),
    (
        'Validate api/openapi.yaml against OpenAPI 3.1 and generate docs into '
        'docs/api.html'
        ,
        ['api/openapi.yaml', 'docs/api.html'],
    ),
    (
        'does swagger-ui support callbacks?'
        ,
        [],
    ),
    (
        'Proofread docs/getting-started.md - passive voice, long sentences, jargon '
        'etc.'
        ,
        ['docs/getting-started.md'],
    ),
    (
        "Restructure CONTRIBUTING.md: move the code style section after 'Setting up', "
        'and link to CODE_OF_CONDUCT.md'
        ,
        ['CONTRIBUTING.md', 'CODE_OF_CONDUCT.md'],
    ),
    (
        'write a mkdocs.yml nav that includes index.md, install.md, usage.md and '
        'faq.md'
        ,
        ['mkdocs.yml', 'index.md', 'install.md', 'usage.md', 'faq.md'],
    ),
    (
        'convert the user guide from guide.docx into guide.md with pandoc'
        ,
        ['guide.docx', 'guide.md'],
    ),
    (
        "What's a good style guide for API reference docs?"
        ,
        [],
    ),
    (
        'pleaes fix the indentaion in congif.yaml, its broken after my merge'
        ,
        ['congif.yaml'],
    ),
    (
        'the script procces_data.py has a typo in its name, rename it to '
        'process_data.py'
        ,
        ['procces_data.py', 'process_data.py'],
    ),
    (
        'In `src/utils/date.ts`, `formatDate()` returns `NaN` for ISO strings. Fix '
        'it?'
        ,
        ['src/utils/date.ts'],
    ),
    (
        'run `python -m pytest tests/test_api.py -k auth` and tell me what fails'
        ,
        ['tests/test_api.py'],
    ),
    (
        "`npm run build` fails with `Cannot find module 'sharp'` in `app/layout.tsx`"
        ,
        ['app/layout.tsx'],
    ),
    (
        'Stardew mod: the UniqueID in manifest.json conflicts with another mod, and '
        'content.json patches the wrong map'
        ,
        ['manifest.json', 'content.json'],
    ),
    (
        'for the Factorio mod, bump info.json to 1.1.3 and add a changelog.txt entry'
        ,
        ['info.json', 'changelog.txt'],
    ),
    (
        'balance tweak: in data/units.xml set archer range from 6.5 to 7.0'
        ,
        ['data/units.xml'],
    ),
    (
        "what's the best way to learn Lua for modding?"
        ,
        [],
    ),
    (
        'clean_survey.R reads survey_raw.csv with read.csv, switch to readr::read_csv '
        'and write survey_clean.rds'
        ,
        ['clean_survey.R', 'survey_raw.csv', 'survey_clean.rds'],
    ),
    (
        "analysis_report.Rmd won't knit, pandoc error 99... knitr 1.45, R 4.3.2"
        ,
        ['analysis_report.Rmd'],
    ),
    (
        'renv.lock is out of sync with DESCRIPTION, fix'
        ,
        ['renv.lock', 'DESCRIPTION'],
    ),
    (
        'deploy.sh should exit on error, add set -euo pipefail'
        ,
        ['deploy.sh'],
    ),
    (
        'write a script that pings 10.0.0.1 through 10.0.0.254 and logs reachable '
        'hosts to reachable_hosts.log'
        ,
        ['reachable_hosts.log'],
    ),
    (
        'Is bash or zsh better for scripting?'
        ,
        [],
    ),
    (
        'jupyter: the kernel dies when I load embeddings.npy (4.2 GB) in '
        'explore.ipynb'
        ,
        ['embeddings.npy', 'explore.ipynb'],
    ),
    (
        'convert model_v1.pkl to ONNX -> model_v1.onnx'
        ,
        ['model_v1.pkl', 'model_v1.onnx'],
    ),
    (
        'In feature_eng.py, df.merge on customer_id duplicates rows. Python 3.12, '
        'pandas 2.2.1'
        ,
        ['feature_eng.py'],
    ),
    (
        'hey!! quick one... can you make the header sticky in index.html, the css is '
        'in styles/main.css'
        ,
        ['index.html', 'styles/main.css'],
    ),
    (
        "Vue: components/NavBar.vue emits 'toggle' but App.vue never listens for it"
        ,
        ['components/NavBar.vue', 'App.vue'],
    ),
    (
        'webpack.config.js -> migrate to vite.config.ts'
        ,
        ['webpack.config.js', 'vite.config.ts'],
    ),
    (
        'jest.config.js: ignore the e2e folder; Cypress specs like login.cy.ts should '
        'be excluded'
        ,
        ['jest.config.js', 'login.cy.ts'],
    ),
    (
        'Please create a .dockerignore mirroring .gitignore but also excluding tests'
        ,
        ['.dockerignore', '.gitignore'],
    ),
    (
        'set up .github/dependabot.yml for npm and github-actions, weekly'
        ,
        ['.github/dependabot.yml'],
    ),
    (
        '.gitlab-ci.yml needs a stage that runs terraform fmt -check'
        ,
        ['.gitlab-ci.yml'],
    ),
    (
        'Jenkinsfile: add a parallel stage for lint and test'
        ,
        ['Jenkinsfile'],
    ),
    (
        "what's the difference between ARG and ENV in docker"
        ,
        [],
    ),
    (
        'the Procfile for heroku should run web: gunicorn wsgi:app'
        ,
        ['Procfile'],
    ),
    (
        'i need the total of the amount column in payouts_march.csv vs '
        'payouts_april.csv, difference in %'
        ,
        ['payouts_march.csv', 'payouts_april.csv'],
    ),
    (
        'the spreadsheet export inventory-2024-06-30.csv has dates like 30.06.2024, '
        'normalize them to ISO'
        ,
        ['inventory-2024-06-30.csv'],
    ),
    (
        'translate res/values/strings.xml to german as res/values-de/strings.xml'
        ,
        ['res/values/strings.xml', 'res/values-de/strings.xml'],
    ),
    (
        'fr.lproj/Localizable.strings is missing 12 keys compared to '
        'en.lproj/Localizable.strings'
        ,
        ['fr.lproj/Localizable.strings', 'en.lproj/Localizable.strings'],
    ),
    (
        'compile locale/fr/LC_MESSAGES/django.po into a .mo'
        ,
        ['locale/fr/LC_MESSAGES/django.po'],
    ),
    (
        'Are there any tools to find unused translation keys?'
        ,
        [],
    ),
    (
        'In header.h the macro MAX_BUF is 256 but buffer.c uses 512 literally, unify'
        ,
        ['header.h', 'buffer.c'],
    ),
    (
        'CMakeLists.txt: add -Wall -Wextra and link against libm'
        ,
        ['CMakeLists.txt'],
    ),
    (
        'platformio.ini: set monitor_speed = 115200 for esp32dev'
        ,
        ['platformio.ini'],
    ),
    (
        'Can you write a haiku about segfaults'
        ,
        [],
    ),
    (
        "So I inherited this project from a coworker who left, and honestly it's a "
        "mess. There's a settings module split into conf/base.py and conf/prod.py, "
        'plus a weird local_settings.py that overrides everything. I want one source '
        'of truth. Thoughts?'
        ,
        ['conf/base.py', 'conf/prod.py', 'local_settings.py'],
    ),
    (
        'with Node.js 20 read data/products.json via fs.readFileSync + JSON.parse, '
        'then write products.min.json'
        ,
        ['data/products.json', 'products.min.json'],
    ),
    (
        'explain what `Object.entries(obj).map(([k, v]) => ...)` does'
        ,
        [],
    ),
    (
        "set __version__ = '1.4.0rc1' in mypkg/__init__.py"
        ,
        ['mypkg/__init__.py'],
    ),
    (
        'setup.py still references README.rst, but we switched to README.md'
        ,
        ['setup.py', 'README.rst', 'README.md'],
    ),
    (
        'tox.ini envlist should include py311 and py312'
        ,
        ['tox.ini'],
    ),
    (
        'mypy.ini: disallow untyped defs only for the core package'
        ,
        ['mypy.ini'],
    ),
    (
        '.pre-commit-config.yaml add ruff and black hooks'
        ,
        ['.pre-commit-config.yaml'],
    ),
    (
        'ruff.toml: line-length 100, select E,F,I'
        ,
        ['ruff.toml'],
    ),
    (
        '.stylelintrc.json complains about scss @use, fix the config'
        ,
        ['.stylelintrc.json'],
    ),
    (
        'Set up .env.example with placeholders for everything in .env.production but '
        'no secrets!'
        ,
        ['.env.example', '.env.production'],
    ),
    (
        'back up the db to dump_2024-07-01.sql.gz, then restore it into staging'
        ,
        ['dump_2024-07-01.sql.gz'],
    ),
    (
        'why is my docker image 2.3GB?? any general tips to shrink it'
        ,
        [],
    ),
    (
        'the payroll export payroll_2024_Q2.csv has employee ids as floats (e.g. '
        '1042.0), cast them to int and save payroll_2024_Q2_clean.csv'
        ,
        ['payroll_2024_Q2.csv', 'payroll_2024_Q2_clean.csv'],
    ),
    (
        'README.md badge for coverage is broken.Also the LICENSE link 404s'
        ,
        ['README.md', 'LICENSE'],
    ),
    (
        'ok now do the same for the other two components'
        ,
        [],
    ),
    (
        'Compare q3_forecast.xlsx with q3_actuals.xlsx and write the variance table '
        'to variance_q3.csv, round to 2 decimals'
        ,
        ['q3_forecast.xlsx', 'q3_actuals.xlsx', 'variance_q3.csv'],
    ),
    (
        'add the new job to k8s/base/kustomization.yaml, the manifest is '
        'k8s/base/worker.yaml and the overlay is '
        'k8s/overlays/prod/patch-replicas.yaml'
        ,
        [
            'k8s/base/kustomization.yaml',
            'k8s/base/worker.yaml',
            'k8s/overlays/prod/patch-replicas.yaml',
        ],
    ),
    (
        'the login flow: routes/auth.js calls middleware/session.js, which reads '
        'secrets from config/keys.js - something is undefined at runtime, help'
        ,
        ['routes/auth.js', 'middleware/session.js', 'config/keys.js'],
    ),
]
