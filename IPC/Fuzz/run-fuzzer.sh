#!/usr/bin/env bash
# Builds the libFuzzer target over the IPC frame and message decoders and runs it.
#   IPC/Fuzz/run-fuzzer.sh [SECONDS]     default 60; 0 runs until stopped (Ctrl-C)
# The corpus grows in .build-fuzz/corpus (seeded from IPC/Vectors); crashes are written to
# .build-fuzz/crash-* with the input that caused them.
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${FUZZ_DIR:-$root/.build-fuzz}
mkdir -p "$out/corpus"

# Seed corpus: every golden frame as a file of its own.
perl -ne 'if (/^== (\S+)/) { close F if $n; $n = $1; open F, ">", "'"$out"'/corpus/golden-$n" or die } elsif ($n && !/^(#|expect:)/) { s/\s//g; print F pack("H*", $_) }' \
  "$root"/IPC/Vectors/*.txt

src=$root/IPC/Sources/MediaRouteIPC
swiftc -sanitize=fuzzer,address -parse-as-library -O -use-ld=lld \
  "$here/FuzzDecoders.swift" "$src"/{JSONValue,JSONReader,JSONReader+Strings,JSONSyntaxError,JSONWriter,JSONOutput,OutgoingBytes,FrameDecoder,FrameError,Message,MessageEnvelope,RPCError}.swift \
  -o "$out/fuzz-decoders"

args=(-timeout=5 -rss_limit_mb=2048 -artifact_prefix="$out/" -print_final_stats=1)
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
exec "$out/fuzz-decoders" "${args[@]}" "$out/corpus"
