/**
 * Tar archives built in memory from local paths or literal entries (docker's Engine API
 * archive endpoints: copyTo, copy-mode work dirs, metadata files; k8s staging, unpacked in
 * the pod), and the first file read back out of a downloaded archive. Uses tar-stream, so
 * no host `tar` is spawned.
 */
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join, posix } from "node:path";
import tarStream from "tar-stream";

/** One literal archive entry. */
export interface TarEntry {
  readonly name: string;
  readonly type?: "file" | "directory" | undefined;
  readonly data?: Buffer | undefined;
  readonly mode?: number | undefined;
  readonly uid?: number | undefined;
  readonly gid?: number | undefined;
}

/** Owner written into every header (defaults to root). */
export interface TarOwner {
  readonly uid?: number | undefined;
  readonly gid?: number | undefined;
}

async function finish(pack: tarStream.Pack, add: () => Promise<void>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  pack.on("data", (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    pack.on("end", resolve);
    pack.on("error", reject);
  });
  try {
    await add();
  } catch (e) {
    pack.destroy(e as Error);
    throw e;
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

function entry(pack: tarStream.Pack, header: tarStream.Headers, data?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, data ?? Buffer.alloc(0), (err) => (err ? reject(err) : resolve()));
  });
}

/** An archive of literal entries. */
export function tarOfFiles(entries: readonly TarEntry[]): Promise<Buffer> {
  const pack = tarStream.pack();
  return finish(pack, async () => {
    for (const e of entries) {
      const dir = e.type === "directory";
      await entry(
        pack,
        {
          name: e.name,
          type: dir ? "directory" : "file",
          mode: e.mode ?? (dir ? 0o755 : 0o644),
          uid: e.uid ?? 0,
          gid: e.gid ?? 0,
          mtime: new Date(),
        },
        dir ? undefined : e.data,
      );
    }
  });
}

/**
 * An archive holding local `src` (a file, a symlink or a directory tree) under the archive
 * path `as` (relative, no leading slash), modes and symlinks kept, owned by `owner`.
 */
export function tarOfPath(src: string, as: string, owner: TarOwner = {}): Promise<Buffer> {
  const pack = tarStream.pack();
  const uid = owner.uid ?? 0;
  const gid = owner.gid ?? 0;
  const walk = async (path: string, name: string): Promise<void> => {
    const st = await lstat(path);
    const base = { name, mode: st.mode & 0o7777, uid, gid, mtime: st.mtime };
    if (st.isDirectory()) {
      await entry(pack, { ...base, type: "directory" });
      for (const child of (await readdir(path)).sort())
        await walk(join(path, child), posix.join(name, child));
    } else if (st.isSymbolicLink()) {
      await entry(pack, { ...base, type: "symlink", linkname: await readlink(path) });
    } else if (st.isFile()) {
      await entry(pack, { ...base, type: "file" }, await readFile(path));
    }
  };
  return finish(pack, () => walk(src, posix.normalize(as)));
}

/** The content of the first regular file in `tar`, or `undefined` when it holds none. */
export function untarFirstFile(tar: Buffer): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const extract = tarStream.extract();
    let found: Buffer | undefined;
    extract.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (found === undefined && header.type === "file") found = Buffer.concat(chunks);
        next();
      });
      stream.resume();
    });
    extract.on("finish", () => resolve(found));
    extract.on("error", reject);
    extract.end(tar);
  });
}
