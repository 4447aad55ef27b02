#!/usr/bin/env bash
# The Gateway API page names this path; the suite runner lives in conformance/run.sh.
exec "$(cd "$(dirname "$0")/../.." && pwd)/conformance/run.sh" "$@"
