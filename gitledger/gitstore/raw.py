"""Git's on-disk formats read and written directly: loose refs, packed-refs, pack v2 + idx v2.

Why raw files here: libgit2 lists refs by iterating all of them (about 1 s at 100,000 loose
refs) and writes each object as a loose file (about 1,000 task versions a second, 16 KB of disk
each). The derived index only needs "which task refs moved since I last looked", and a bulk
import only needs "write many objects at once", so both read and write Git's documented on-disk
formats directly. libgit2 reads everything written here, re-hashing each object, so a mistake
would surface as a CorruptRecord, not as silent damage. No pygit2 here.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import zlib
from pathlib import Path

from ..structs import struct

# hashlib and tempfile are the bulk writer's alone: a reader of refs (the step judge's look at
# packed-refs) does not load OpenSSL for them.
TYPE_CHECKING = False  # not typing's: a hook's modules do not import typing (structs.py)
if TYPE_CHECKING:
    from .store import GitStore


def local_offset_minutes() -> int:
    """This machine's offset from UTC now, in minutes, as a commit's time zone."""
    local = time.localtime()
    return (local.tm_gmtoff or 0) // 60


_HEADER = re.compile(rb"^(commit|tree|blob|tag) (\d+)\x00")
_CHUNK = 1 << 16


def loose_object_problem(git_dir: Path | str, oid: str) -> str | None:
    """What is wrong with the loose object file of ``oid``, or None (sound, or not loose).

    libgit2 1.9.7 spins forever at 100% CPU inflating a truncated loose object (2 bytes to half
    its length were tried), so the store checks the file first: a zlib stream that ends, a Git
    header, and as many bytes as the header says. Streamed in 64 KB pieces: bounded memory.
    """
    try:
        fd = os.open(f"{git_dir}/objects/{oid[:2]}/{oid[2:]}", os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None  # packed, or missing (libgit2 says which)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    try:
        inflate = zlib.decompressobj()
        head = b""
        size = -1
        seen = 0
        while chunk := os.read(fd, _CHUNK):
            out = inflate.decompress(chunk, _CHUNK)
            while True:
                if size < 0:
                    head += out
                    found = _HEADER.match(head)
                    if found:
                        size = int(found.group(2))
                        seen = len(head) - found.end()
                    elif b"\x00" in head or len(head) > 64:
                        return "not a Git object (no type and size header)"
                else:
                    seen += len(out)
                if not inflate.unconsumed_tail:
                    break
                out = inflate.decompress(inflate.unconsumed_tail, _CHUNK)
            if inflate.eof:
                break
    except zlib.error as exc:
        return f"not a valid compressed object ({exc})"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if not inflate.eof:
        return "truncated (its compressed data ends early)"
    if size < 0:
        return "not a Git object (no type and size header)"
    if seen != size:
        return f"its header says {size} bytes but it holds {seen}"
    return None


_OID = re.compile(rb"^[0-9a-f]{40}$")


def broken_refs(git_dir: Path, prefix: str) -> dict[str, str]:
    """Loose ref files under ``prefix`` (e.g. ``refs/gitledger/``) that name no object: refname ->
    what the file holds ("is empty", "holds 'garbage'"). Git and libgit2 skip such a ref when
    listing, so its record would vanish from every listing, export and backup unremarked."""
    out: dict[str, str] = {}
    root = git_dir / prefix.rstrip("/")
    for folder, _dirs, names in os.walk(root):  # followlinks=False
        for leaf in names:
            if leaf.endswith(".lock"):
                continue
            path = os.path.join(folder, leaf)
            try:
                with open(path, "rb") as fh:
                    content = fh.read(128).strip()
            except OSError:
                continue
            if _OID.match(content) or content.startswith(b"ref:"):
                continue
            name = os.path.relpath(path, git_dir).replace(os.sep, "/")
            shown = content[:40].decode("utf-8", "replace")
            out[name] = "is empty" if not content else f"holds {shown!r}, not a commit id"
    return out


def read_packed_refs(git_dir: Path) -> dict[str, str]:
    """Every ref in ``packed-refs`` with its object id (peeled ``^`` lines and comments skipped);
    empty when there is no such file. The one reader of packed-refs in gitledger."""
    try:
        with open(git_dir / "packed-refs", "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return {}
    out: dict[str, str] = {}
    for line in data.split(b"\n"):
        if len(line) < 42 or line[:1] in (b"#", b"^"):
            continue
        oid, _, name = line.partition(b" ")
        out[name.decode("utf-8", "replace")] = oid.decode("ascii", "replace")
    return out


@struct(frozen=True)
class RefsStamp:
    """A cheap fingerprint of one ref directory and packed-refs: when it is unchanged, no ref in
    the directory was created, moved or deleted (Git replaces a loose ref by renaming a lock file
    into the directory, which updates the directory's mtime)."""

    directory: tuple[int, int, int]  # mtime_ns, inode, size of the loose-ref directory
    packed: tuple[int, int, int]  # mtime_ns, inode, size of packed-refs (zeros when absent)

    def encode(self) -> str:
        return ",".join(str(v) for v in (*self.directory, *self.packed))

    def newest_ns(self) -> int:
        return max(self.directory[0], self.packed[0])


def _stat_key(path: Path) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return (0, 0, 0)
    return (st.st_mtime_ns, st.st_ino, st.st_size)


def refs_stamp(git_dir: Path, directory: str) -> RefsStamp:
    """The fingerprint of ``git_dir/directory`` (e.g. ``refs/gitledger/tasks``) and packed-refs."""
    return RefsStamp(_stat_key(git_dir / directory), _stat_key(git_dir / "packed-refs"))


def ref_tips(git_dir: Path, directory: str) -> dict[str, str]:
    """Every ref directly under ``directory`` with the object id it points at, read from the
    loose-ref files and packed-refs (a loose ref wins over a packed one, as in Git).

    Symbolic refs and unreadable files are left out; lock files are ignored. At 100,000 loose refs
    this reads in about 0.3 s on this kind of machine, against about 1 s through libgit2.
    """
    prefix = directory.rstrip("/") + "/"
    tips: dict[str, str] = {}
    for name, oid in read_packed_refs(git_dir).items():
        if name.startswith(prefix) and "/" not in name[len(prefix) :]:
            tips[name] = oid
    loose = git_dir / directory
    try:
        names = [e.name for e in os.scandir(loose) if not e.name.endswith(".lock")]
        dir_fd = os.open(loose, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return tips
    # os.open relative to the directory's descriptor: about three times faster than open().
    try:
        for leaf in names:
            try:
                fd = os.open(leaf, os.O_RDONLY, dir_fd=dir_fd)
            except (FileNotFoundError, PermissionError):
                continue
            try:
                content = os.read(fd, 128).strip()
            except IsADirectoryError:
                continue
            finally:
                os.close(fd)
            if content.startswith(b"ref:") or not content:
                continue
            tips[prefix + leaf] = content.decode("ascii", "replace")
    finally:
        os.close(dir_fd)
    return tips


_OBJ_TYPES = {"commit": 1, "tree": 2, "blob": 3}


class BulkWriter:
    """Writes many commits into one new pack file and moves many refs, for bulk import.

    Use under ``GitStore.lock()``: ``blob``/``tree``/``commit`` compute object ids as Git does and
    queue the objects; ``finish()`` writes ``objects/pack/pack-<sha>.pack`` and its ``.idx`` (both
    version 2), then moves each queued ref by Git's own protocol (create ``<ref>.lock``
    exclusively, check the ref still points where the caller read it, rename). A ref that moved
    meanwhile is reported, not overwritten.
    """

    def __init__(self, store: GitStore, level: int = 1) -> None:
        import hashlib
        import tempfile

        self._sha1 = hashlib.sha1
        self.store = store
        self.level = level
        self._pack_dir = store.path / "objects" / "pack"
        self._pack_dir.mkdir(parents=True, exist_ok=True)
        self._tmp = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in finish()/abort()
            dir=self._pack_dir, prefix="tmp_gitledger_", suffix=".pack", delete=False
        )
        self._tmp.write(b"PACK" + (2).to_bytes(4, "big") + (0).to_bytes(4, "big"))
        self._offset = 12
        self._entries: dict[bytes, tuple[int, int]] = {}  # raw sha -> (offset, crc32)
        self._refs: list[tuple[str, str, str | None]] = []
        self.locked: list[str] = []  # refs finish() could not move because <ref>.lock existed
        self._offset_minutes = local_offset_minutes()

    def _add(self, kind: str, body: bytes) -> str:
        header = f"{kind} {len(body)}".encode() + b"\0"
        raw_sha = self._sha1(header + body).digest()
        if raw_sha in self._entries:
            return raw_sha.hex()
        size = len(body)
        first = (_OBJ_TYPES[kind] << 4) | (size & 0x0F)
        size >>= 4
        head = bytearray()
        while size:
            head.append(first | 0x80)
            first = size & 0x7F
            size >>= 7
        head.append(first)
        packed = bytes(head) + zlib.compress(body, self.level)
        self._entries[raw_sha] = (self._offset, zlib.crc32(packed))
        self._tmp.write(packed)
        self._offset += len(packed)
        return raw_sha.hex()

    def blob(self, data: bytes) -> str:
        return self._add("blob", data)

    def tree(self, files: dict[str, str]) -> str:
        """A flat tree of regular files: name -> blob id."""
        body = b"".join(
            b"100644 " + name.encode() + b"\0" + bytes.fromhex(files[name])
            for name in sorted(files, key=lambda n: n.encode())
        )
        return self._add("tree", body)

    def commit(
        self,
        tree: str,
        parents: list[str],
        author: tuple[str, str],
        when: int,
        message: str,
        offset_minutes: int | None = None,
    ) -> str:
        offset = self._offset_minutes if offset_minutes is None else offset_minutes
        sign = "+" if offset >= 0 else "-"
        tz = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        name = "".join(ch for ch in author[0] if ch not in "<>\n") or "unknown"
        email = "".join(ch for ch in author[1] if ch not in "<>\n")
        person = f"{name} <{email}> {when} {tz}"
        lines = [f"tree {tree}"] + [f"parent {p}" for p in parents]
        lines += [f"author {person}", f"committer {person}", "", message]
        return self._add("commit", "\n".join(lines).encode("utf-8"))

    def set_ref(self, refname: str, target: str, expected_tip: str | None) -> None:
        """Queue moving ``refname`` to ``target`` (``expected_tip=None``: it must not exist)."""
        self._refs.append((refname, target, expected_tip))

    def abort(self) -> None:
        self._tmp.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._tmp.name)

    def finish(self) -> list[str]:
        """Write the pack and index, then move the refs; returns the refs that had moved."""
        try:
            count = len(self._entries)
            if count:
                self._tmp.seek(8)
                self._tmp.write(count.to_bytes(4, "big"))
                self._tmp.flush()
                self._tmp.seek(0)
                digest = self._sha1()
                while chunk := self._tmp.read(1 << 20):
                    digest.update(chunk)
                pack_sha = digest.digest()
                self._tmp.seek(0, os.SEEK_END)
                self._tmp.write(pack_sha)
                self._tmp.close()
                shas = sorted(self._entries)
                fanout = [0] * 256
                for sha in shas:
                    fanout[sha[0]] += 1
                running = 0
                idx = bytearray(b"\xfftOc" + (2).to_bytes(4, "big"))
                for n in fanout:
                    running += n
                    idx += running.to_bytes(4, "big")
                idx += b"".join(shas)
                idx += b"".join(self._entries[s][1].to_bytes(4, "big") for s in shas)
                large: list[int] = []
                for sha in shas:
                    off = self._entries[sha][0]
                    if off < 0x80000000:
                        idx += off.to_bytes(4, "big")
                    else:
                        idx += (0x80000000 | len(large)).to_bytes(4, "big")
                        large.append(off)
                idx += b"".join(off.to_bytes(8, "big") for off in large)
                idx += pack_sha
                idx += self._sha1(bytes(idx)).digest()
                base = self._pack_dir / f"pack-{pack_sha.hex()}"
                os.replace(self._tmp.name, f"{base}.pack")
                tmp_idx = f"{base}.idx.tmp"
                with open(tmp_idx, "wb") as fh:
                    fh.write(idx)
                os.replace(tmp_idx, f"{base}.idx")
            else:
                self.abort()
        except BaseException:
            self.abort()
            raise
        # libgit2 rescans objects/pack when it misses an object, so the new pack needs no notice.
        # Refs stay loose: libgit2 rewrites packed-refs to update a packed ref (tens of ms at
        # 100,000), so packing them here would make every later write slow. (Threads did not
        # help: creating files in one directory serializes on its lock.)
        packed = read_packed_refs(self.store.path)
        return [ref for ref, target, old in self._refs if not self._move(ref, target, old, packed)]

    @staticmethod
    def _take(path: Path, lock: str) -> int:
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

    def _move(
        self, refname: str, target: str, expected: str | None, packed: dict[str, str]
    ) -> bool:
        """Git's own protocol for one ref: take ``<ref>.lock`` exclusively, check, rename."""
        path = self.store.path / refname
        lock = f"{path}.lock"
        try:
            fd = self._take(path, lock)
        except FileExistsError:
            # A stale lock a killed writer (an import killed mid-way, say) left is healed as the
            # store's own writes heal it: under the writer lock, once it is old enough.
            if not self.store.clear_stale_lock(refname):
                self.locked.append(refname)  # a live writer holds it
                return False
            try:
                fd = self._take(path, lock)
            except FileExistsError:
                self.locked.append(refname)
                return False
        try:
            try:
                with open(path, "rb") as fh:
                    current: str | None = fh.read(128).strip().decode("ascii", "replace")
            except FileNotFoundError:
                current = packed.get(refname)
            if current != expected:
                os.close(fd)
                os.unlink(lock)
                return False
            os.write(fd, target.encode() + b"\n")
            os.close(fd)
            os.replace(lock, path)
            return True
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            raise


__all__ = [
    "BulkWriter",
    "RefsStamp",
    "local_offset_minutes",
    "read_packed_refs",
    "ref_tips",
    "refs_stamp",
]
