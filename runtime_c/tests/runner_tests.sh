#!/bin/sh
# irp-run end to end: runner_tests.sh "IRP_RUN (maybe under qemu)" DIR_OF_TEST_MODULES
set -eu
RUN="$1"
DIR="$2"
TMP="$DIR/runner_tmp"
mkdir -p "$TMP"
fail() { echo "runner_tests: FAIL: $*" >&2; exit 1; }

python3 - "$TMP" <<'PY'
import struct, sys
d = sys.argv[1]
open(f"{d}/a.bin", "wb").write(struct.pack("<100f", *range(100)))
open(f"{d}/b.bin", "wb").write(struct.pack("<100f", *[0.5 * i for i in range(100)]))
open(f"{d}/short.bin", "wb").write(b"\0" * 12)
open(f"{d}/expected.bin", "wb").write(struct.pack("<100f", *[1.5 * i for i in range(100)]))
open(f"{d}/expected_bb.bin", "wb").write(struct.pack("<100f", *[1.0 * i for i in range(100)]))
PY

$RUN "$DIR/good.vmfb" --input="$TMP/a.bin" --input="$TMP/b.bin" --output="$TMP/sum.bin" || fail "run main"
cmp -s "$TMP/sum.bin" "$TMP/expected.bin" || fail "main output differs from a + b"
# two input sets: two calls in one loaded module (state carries over), the outputs of the last
$RUN "$DIR/good.vmfb" --input="$TMP/a.bin" --input="$TMP/b.bin" --input="$TMP/b.bin" --input="$TMP/b.bin" \
    --output="$TMP/sum2.bin" || fail "run main twice"
cmp -s "$TMP/sum2.bin" "$TMP/expected_bb.bin" || fail "second call's output differs from b + b"
$RUN --info "$DIR/good.vmfb" > "$TMP/info.txt" || fail "--info"
grep -q "input 0 'a': f32\[100\] (400 bytes)" "$TMP/info.txt" || fail "--info text: $(cat "$TMP/info.txt")"
$RUN "$DIR/good.vmfb" --input="$TMP/a.bin" --input="$TMP/b.bin" --print --repeat=3 > "$TMP/print.txt" || fail "--print"
grep -q "= 0 1.5 3 4.5" "$TMP/print.txt" || fail "--print values: $(cat "$TMP/print.txt")"
grep -q "main: 3 calls, median" "$TMP/print.txt" || fail "--repeat timing line"

# dynamic dims: the input's shape after its --input, the outputs' real shapes written back
python3 -c "import struct; open('$TMP/five.bin', 'wb').write(struct.pack('<5f', 1, 2, 3, 4, 5)); open('$TMP/two.bin', 'wb').write(struct.pack('<2f', 6, 7))"
$RUN "$DIR/dynamic.vmfb" --function=concat --input="$TMP/five.bin" --shape=5 --input="$TMP/two.bin" --shape=2 \
    --output="$TMP/c.bin" --output-shapes="$TMP/shapes.txt" --stats > "$TMP/stats.txt" || fail "run concat"
[ "$(cat "$TMP/shapes.txt")" = "7" ] || fail "concat output shape: $(cat "$TMP/shapes.txt")"
python3 -c "import struct, sys; sys.exit(struct.unpack('<7f', open('$TMP/c.bin', 'rb').read()) != (1, 2, 3, 4, 5, 6, 7))" \
    || fail "concat output values"
grep -q "peak memory: 128 bytes" "$TMP/stats.txt" || fail "--stats: $(cat "$TMP/stats.txt")"
$RUN --info "$DIR/dynamic.vmfb" --function=concat > "$TMP/info.txt" || fail "--info dynamic"
grep -q "output 0 'c': f32\[-1\] (0 bytes) dims {n + m}" "$TMP/info.txt" || fail "--info dynamic: $(cat "$TMP/info.txt")"

set +e
$RUN "$DIR/dynamic.vmfb" --function=concat --input="$TMP/five.bin" --input="$TMP/two.bin" 2> "$TMP/err.txt"
[ $? -eq 2 ] || fail "dynamic input without --shape: exit code"
grep -q "input 0 'a' has dynamic dims: give its shape with --shape" "$TMP/err.txt" || fail "no --shape message"
$RUN "$DIR/dynamic.vmfb" --function=same_n --input="$TMP/five.bin" --shape=5 --input="$TMP/two.bin" --shape=2 2> "$TMP/err.txt"
[ $? -eq 1 ] || fail "inconsistent dims: exit code"
grep -q "input 'b' dim 0 (n) is 2 but input 'a' dim 0 (n) is 5" "$TMP/err.txt" || fail "inconsistent dims: $(cat "$TMP/err.txt")"
$RUN "$DIR/good.vmfb" --input="$TMP/short.bin" --input="$TMP/b.bin" 2> "$TMP/err.txt"
[ $? -eq 1 ] || fail "short input: exit code"
grep -q "input 0 'a' needs 400 bytes" "$TMP/err.txt" || fail "short input message: $(cat "$TMP/err.txt")"
$RUN "$DIR/bad_version.vmfb" --info 2> "$TMP/err.txt"
[ $? -eq 1 ] || fail "bad module: exit code"
grep -q "format version is 2" "$TMP/err.txt" || fail "bad module message"
$RUN "$DIR/good.vmfb" --function=fails 2> "$TMP/err.txt"
[ $? -eq 1 ] || fail "fail: exit code"
grep -q "fail with code 42" "$TMP/err.txt" || fail "fail message"
$RUN --bogus 2> /dev/null
[ $? -eq 2 ] || fail "usage: exit code"
$RUN "$DIR/good.vmfb" --input="$TMP/a.bin" 2> /dev/null
[ $? -eq 2 ] || fail "input count: exit code"
set -e
echo "runner_tests: all passed"
