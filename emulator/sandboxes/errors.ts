// The one error type of the sandbox emulator and the JSON `{message, code}` body the upstream sends for it.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const badRequest = (message: string, code = "invalid_request") => new ApiError(400, code, message);

export function errorBody(err: ApiError): string {
  return JSON.stringify({ message: err.message, code: err.code });
}

/** Turns an ApiError (or anything thrown) into the upstream's JSON error response. */
export function errorResponse(err: unknown): Response {
  const e = err instanceof ApiError ? err : new ApiError(500, "internal_error", "Internal emulator error");
  return new Response(errorBody(e), { status: e.status, headers: { "content-type": "application/json" } });
}

/** Maps a Node fs error code to the status a careful upstream would send. */
export function fsError(err: unknown, path: string): ApiError {
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case "ENOENT":
      return new ApiError(404, "not_found", `${path}: no such file or directory (not found)`);
    case "EACCES":
    case "EPERM":
      return new ApiError(400, "permission_denied", `${path}: operation not permitted`);
    case "EEXIST":
      return new ApiError(409, "already_exists", `${path}: already exists`);
    case "ENOTDIR":
      return new ApiError(400, "not_a_directory", `${path}: not a directory`);
    case "EISDIR":
      return new ApiError(400, "is_a_directory", `${path}: is a directory`);
    case "ENOTEMPTY":
      return new ApiError(400, "directory_not_empty", `${path}: directory not empty`);
    case "EINVAL":
      return new ApiError(400, "invalid_argument", `${path}: invalid argument (for chown: an id the sandbox does not map)`);
    case "EROFS":
      return new ApiError(400, "read_only", `${path}: read-only file system`);
    case "ELOOP":
      return new ApiError(400, "symlink_loop", `${path}: too many levels of symbolic links`);
    case "ENOSPC":
    case "EDQUOT":
      return new ApiError(507, "no_space", `${path}: no space left on device (the sandbox's disk is full)`);
    default:
      return new ApiError(500, "io_error", `${path}: ${(err as Error)?.message ?? "I/O error"}`);
  }
}
