// A one-page PDF writer for the local web, and the reader that turns such a PDF back into text lines.

const escapePdfText = (s: string) => s.replace(/\\/g, "\\\\").replace(/\(/g, "\\(").replace(/\)/g, "\\)");

/** A valid PDF 1.4 document with one page of Helvetica text, one `Tj` per line (uncompressed, so it stays readable). */
export function writePdf(title: string, lines: string[]): Buffer {
  const wrapped = lines.flatMap((l) => wrap(l, 90));
  const ops = [`BT /F1 16 Tf 50 790 Td (${escapePdfText(title)}) Tj ET`];
  for (const [i, l] of wrapped.slice(0, 60).entries()) ops.push(`BT /F1 10 Tf 50 ${760 - i * 12} Td (${escapePdfText(l)}) Tj ET`);
  const stream = ops.join("\n");
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    `<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}\nendstream`,
    `<< /Title (${escapePdfText(title)}) /Producer (tollgate emulator) >>`,
  ];
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

function wrap(line: string, width: number): string[] {
  const out: string[] = [];
  let cur = "";
  for (const word of line.split(/\s+/)) {
    if (cur && cur.length + word.length + 1 > width) {
      out.push(cur);
      cur = word;
    } else cur = cur ? `${cur} ${word}` : word;
  }
  if (cur) out.push(cur);
  return out;
}

/**
 * Text of a PDF whose content streams are uncompressed: the strings shown with `Tj`, one line each, and the
 * `/Title` of its info dictionary. Compressed or encrypted PDFs (none on the local web) read as no text.
 */
export function readPdfText(bytes: Uint8Array): { title?: string; lines: string[] } {
  const src = Buffer.from(bytes).toString("latin1");
  const unescapePdf = (s: string) => s.replace(/\\([\\()])/g, "$1");
  const lines = [...src.matchAll(/\(((?:\\.|[^\\)])*)\)\s*Tj/g)].map((m) => unescapePdf(m[1]));
  const title = /\/Title\s*\(((?:\\.|[^\\)])*)\)/.exec(src)?.[1];
  return { title: title === undefined ? undefined : unescapePdf(title), lines };
}
