#!/usr/bin/env bash
# scripts/bootstrap.sh when `npm install` of onnxruntime-node fails: it says what
# failed (npm's own error lines, not its log or stack trace) and how to fix it, and
# exits 1; it said nothing at all (npm --silent), so scripts/demo.sh ended right after
# "installing onnxruntime-node". npm fails for real: against a registry nobody
# listens on, and against a local HTTPS registry whose self-signed certificate npm
# does not trust. Following the advice (NODE_EXTRA_CA_CERTS) then installs from that
# registry, as quietly as before (one line), and a second run says nothing.
# The install goes to SALT_ORT_DIR under WORK_DIR: the checkout's .ort/ is not touched.
# Usage: bootstrap_npm_failure.sh WORK_DIR
set -euo pipefail
work=$1
bootstrap=$(cd "$(dirname "$0")/../.." && pwd)/scripts/bootstrap.sh
for tool in npm node openssl tar; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (scripts/bootstrap.sh installs npm and node)"; exit 1; }
done
rm -rf "$work" && mkdir -p "$work/package"
cd "$work"
version=$(sed -n 's/^ort_version=//p' "$bootstrap")

# The registry: onnxruntime-node@$version as a package of its package.json alone.
printf '{\n  "name": "onnxruntime-node",\n  "version": "%s"\n}\n' "$version" >package/package.json
tar czf package.tgz package
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 2>/dev/null
cat >registry.js <<'JS'
// A one-package npm registry over HTTPS: its metadata and tarball.
const crypto = require("crypto"), fs = require("fs"), https = require("https");
const [key, cert, tarball, version, portFile] = process.argv.slice(2);
const tgz = fs.readFileSync(tarball);
const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
  const base = `https://127.0.0.1:${server.address().port}`;
  if (req.url.endsWith(".tgz")) return res.end(tgz);
  if (req.url !== "/onnxruntime-node") { res.writeHead(404); return res.end("{}"); }
  const dist = { tarball: `${base}/onnxruntime-node/-/onnxruntime-node-${version}.tgz`,
                 integrity: "sha512-" + crypto.createHash("sha512").update(tgz).digest("base64") };
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ name: "onnxruntime-node", "dist-tags": { latest: version },
                           versions: { [version]: { name: "onnxruntime-node", version, dist } } }));
});
server.listen(0, "127.0.0.1", () => fs.writeFileSync(portFile, String(server.address().port)));
JS
node registry.js key.pem cert.pem package.tgz "$version" port &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s port ] && break; sleep 0.1; done
[ -s port ] || { echo "FAIL: the local registry did not start"; exit 1; }

failed=0
export SALT_ORT_DIR=$work/ort npm_config_cache=$work/npm-cache npm_config_fetch_retries=0 npm_config_update_notifier=false
bootstrap() {  # bootstrap REGISTRY [env...]: runs bootstrap.sh --demo, sets rc, out, err
  local registry=$1
  shift
  rc=0
  env npm_config_registry="$registry" "$@" bash "$bootstrap" --demo >out.txt 2>err.txt || rc=$?
  out=$(cat out.txt) err=$(cat err.txt)
}
fails() {  # fails WHAT NPM_PATTERN FIX_PATTERN: exit 1, the error line, npm's line, the fix, short
  local what=$1 npm_pattern=$2 fix_pattern=$3 problem=""
  [ "$rc" -eq 1 ] || problem="exit $rc, not 1"
  grep -q "^bootstrap: error: npm install of onnxruntime-node $version into $work/ort failed" err.txt ||
    problem="$problem; no line 'bootstrap: error: npm install of onnxruntime-node ... failed'"
  grep -q "^  npm: .*$npm_pattern" err.txt || problem="$problem; npm's line '$npm_pattern' not shown"
  grep -q "^bootstrap: .*$fix_pattern" err.txt || problem="$problem; no advice '$fix_pattern'"
  [ "$(wc -l <err.txt)" -le 11 ] && ! grep -q '^  npm: *at ' err.txt || problem="$problem; more than npm's error lines"
  if [ -n "$problem" ]; then
    echo "FAIL $what: ${problem#; }; stdout and stderr:"; printf '%s\n%s\n' "$out" "$err"; failed=1
  else
    echo "ok   $what:"; sed 's/^/       /' err.txt
  fi
}

bootstrap https://127.0.0.1:1/
fails "no registry listening" "ECONNREFUSED" "npm cannot reach its registry https://127.0.0.1:1/: behind a proxy, 'npm config set proxy"
bootstrap "https://127.0.0.1:$(cat port)/"
fails "an untrusted TLS certificate" "self-signed certificate" "npm config set cafile /path/to/ca.pem' or NODE_EXTRA_CA_CERTS=/path/to/ca.pem"

bootstrap "https://127.0.0.1:$(cat port)/" NODE_EXTRA_CA_CERTS="$work/cert.pem"
if [ "$rc" -ne 0 ] || [ "$out" != "bootstrap: installing onnxruntime-node $version into $work/ort/" ] ||
   [ -n "$err" ] || ! grep -q "\"version\": \"$version\"" "$work/ort/node_modules/onnxruntime-node/package.json" ||
   [ -e "$work/ort/npm-install.log" ]; then
  echo "FAIL the advice followed: expected exit 0, one line and the package in $work/ort; got exit $rc:"
  printf '%s\n%s\n' "$out" "$err"; failed=1
else
  echo "ok   the advice followed (NODE_EXTRA_CA_CERTS): installed, one line: $out"
fi
bootstrap "https://127.0.0.1:1/"
if [ "$rc" -ne 0 ] || [ -n "$out$err" ]; then
  echo "FAIL installed already: expected exit 0 and no output, got exit $rc:"; printf '%s\n%s\n' "$out" "$err"; failed=1
else
  echo "ok   installed already: nothing said, npm not run"
fi
exit "$failed"
