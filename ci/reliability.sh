#!/usr/bin/env bash
# The reliability report (issue 6): every fault scenario of mocks/scenarios/
# on several hosts, a crash before every change of a whole node's
# installation, hostile archives published with matching digests; prints
# how many ran and that none left a half-installed or unverified engine
# marked ready. The same test runs (silently) in `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --quiet --test it reliability_report -- --nocapture 2>&1 | sed -n '/^reliability report/,/^  ready but/p'
cargo test --locked --quiet --lib archive:: 2>&1 | grep -E "^test result" | sed 's/^/unpacker unit tests (hostile tar.gz and wheels): /'
