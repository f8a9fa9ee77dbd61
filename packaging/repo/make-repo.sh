#!/bin/bash
# make-repo.sh: signed package repositories from built packages, for `make
# repo` (and its test): an apt repository (flat, apt-ftparchive; Release
# signed as InRelease and Release.gpg) and a yum repository (createrepo_c;
# the RPMs and repomd.xml signed), with the lines an operator adds to
# sources.list.d / yum.repos.d and the public key they point to.
#
#   make-repo.sh --debs DIR --rpms DIR --out DIR [--gnupg-home DIR]
#
# The key is the first secret key in --gnupg-home (default OUT/gnupg): one is
# generated there when it has none (no passphrase: a key for testing; a
# release is signed with the project's key, its home given here).
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }
die() { echo "make-repo.sh: $*" >&2; exit 1; }

debs= rpms= out= home=
while [ $# -gt 0 ]; do
	case $1 in
	--debs) debs=$2; shift 2 ;;
	--rpms) rpms=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--gnupg-home) home=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "make-repo.sh: unknown argument '$1'" >&2; usage 2 ;;
	esac
done
[ -n "$out" ] || die "--out is required"
[ -n "$debs" ] || [ -n "$rpms" ] || die "nothing to publish: give --debs, --rpms or both"
for tool in gpg ${debs:+apt-ftparchive} ${rpms:+createrepo_c rpmsign}; do
	command -v "$tool" > /dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
export GNUPGHOME=${home:-$out/gnupg}
mkdir -p "$GNUPGHOME"
chmod 700 "$GNUPGHOME"

if ! gpg --batch --list-secret-keys --with-colons 2>/dev/null | grep -q '^sec'; then
	echo "make-repo.sh: generating a signing key in $GNUPGHOME (for testing: no passphrase)" >&2
	gpg --batch --quiet --passphrase '' --quick-generate-key \
		"PFS test repository <pfs-dev@example.org>" ed25519 sign 1y
fi
fpr=$(gpg --batch --list-secret-keys --with-colons | awk -F: '/^fpr/ { print $10; exit }')
[ -n "$fpr" ] || die "no secret key in $GNUPGHOME"
gpg --batch --yes --export "$fpr" > "$out/pfs-archive-keyring.gpg"
gpg --batch --yes --armor --export "$fpr" > "$out/RPM-GPG-KEY-pfs"

if [ -n "$debs" ]; then
	ls "$debs"/*.deb > /dev/null 2>&1 || die "no .deb in $debs"
	rm -rf "$out/apt"
	mkdir -p "$out/apt"
	cp "$debs"/*.deb "$out/apt/"
	(
		cd "$out/apt"
		apt-ftparchive packages . > Packages
		gzip -9nk Packages
		apt-ftparchive \
			-o APT::FTPArchive::Release::Origin=PFS \
			-o APT::FTPArchive::Release::Label=PFS \
			-o APT::FTPArchive::Release::Suite=stable \
			-o APT::FTPArchive::Release::Codename=bookworm \
			-o APT::FTPArchive::Release::Description="PFS parallel file system" \
			release . > Release
		gpg --batch --yes --local-user "$fpr" --clearsign -o InRelease Release
		gpg --batch --yes --local-user "$fpr" --armor --detach-sign -o Release.gpg Release
	)
	echo "deb [signed-by=/etc/apt/keyrings/pfs-archive-keyring.gpg] file:$out/apt ./" > "$out/pfs.list"
	echo "apt repository: $out/apt ($(ls "$out"/apt/*.deb | wc -l) packages), sources line in $out/pfs.list" >&2
fi

if [ -n "$rpms" ]; then
	mapfile -t found < <(find "$rpms" -name '*.rpm' -type f)
	[ ${#found[@]} -gt 0 ] || die "no .rpm in $rpms"
	rm -rf "$out/yum"
	mkdir -p "$out/yum"
	cp "${found[@]}" "$out/yum/"
	# (Debian's rpm calls gpg2, which Debian does not ship.)
	rpmsign --addsign --define "_gpg_name $fpr" --define "_gpg_path $GNUPGHOME" --define "__gpg $(command -v gpg)" \
		"$out"/yum/*.rpm > /dev/null
	createrepo_c --quiet "$out/yum"
	gpg --batch --yes --local-user "$fpr" --armor --detach-sign -o "$out/yum/repodata/repomd.xml.asc" \
		"$out/yum/repodata/repomd.xml"
	cat > "$out/pfs.repo" <<-REPO
		[pfs]
		name=PFS parallel file system
		baseurl=file://$out/yum
		enabled=1
		gpgcheck=1
		repo_gpgcheck=1
		gpgkey=file://$out/RPM-GPG-KEY-pfs
	REPO
	echo "yum repository: $out/yum (${#found[@]} packages), repo file $out/pfs.repo" >&2
fi
echo "signed by $fpr; public key: $out/pfs-archive-keyring.gpg (apt), $out/RPM-GPG-KEY-pfs (yum)" >&2
