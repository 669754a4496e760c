// The pages' one style sheet (the console's and the OAuth consent and error pages'), inlined in every page (no build step,
// no static files to serve on Workers).
export const PAGE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;background:#f4f6fa}
header{display:flex;align-items:center;gap:24px;padding:10px 24px;background:#1d2330;color:#fff}
header .brand{font-weight:700;letter-spacing:.02em;flex:none}
header nav{display:flex;gap:4px;flex:1;min-width:0;overflow-x:auto}
header nav a{color:#cfd6e4;text-decoration:none;padding:6px 10px;border-radius:6px;white-space:nowrap;flex:none}
header nav a.on,header nav a:hover{background:#343c50;color:#fff}
header .who{color:#cfd6e4;font-size:13px;min-width:0;max-width:24em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
header form{margin:0;flex:none}
header form button{white-space:nowrap}
main{max-width:1180px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:22px;margin:4px 0 16px}
h2{font-size:16px;margin:24px 0 10px}
a{color:#2456c7}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:16px}
.card{background:#fff;border:1px solid #dde2ec;border-radius:10px;padding:14px 16px}
.card h3{margin:0 0 8px;font-size:15px;display:flex;justify-content:space-between;align-items:center}
.stats{display:flex;gap:16px;flex-wrap:wrap;margin-bottom:8px}
.stat{background:#fff;border:1px solid #dde2ec;border-radius:10px;padding:12px 16px;min-width:170px}
.stat b{display:block;font-size:22px}
.stat span{color:#5b6477;font-size:12px}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid #dde2ec;border-radius:10px;overflow:hidden}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid #edf0f5;vertical-align:top}
th{background:#f8f9fc;font-weight:600;color:#3b4356;font-size:13px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#e8ecf4;color:#3b4356}
.pill.ok,.pill.active,.pill.committed{background:#dcf5e4;color:#17643a}
.pill.warn,.pill.reserved,.pill.uncertain{background:#fff1cc;color:#7a5400}
.pill.off,.pill.closed,.pill.released,.pill.gone,.pill.stopped{background:#eceef2;color:#5b6477}
.pill.bad,.pill.error{background:#fde0e0;color:#8e1c1c}
form.inline{display:inline;margin:0}
button,.button{font:inherit;border:1px solid #b9c2d3;background:#fff;border-radius:6px;padding:4px 12px;cursor:pointer;color:#1d2330}
button.primary,a.button.primary{background:#2456c7;border-color:#2456c7;color:#fff}
button.danger{border-color:#d45;color:#b1182b}
input,select{font:inherit;padding:5px 8px;border:1px solid #b9c2d3;border-radius:6px;background:#fff}
.filters{display:flex;gap:10px;align-items:end;flex-wrap:wrap;margin-bottom:12px}
.filters label{display:flex;flex-direction:column;font-size:12px;color:#5b6477;gap:2px}
.notice{padding:10px 14px;border-radius:8px;background:#e5eeff;border:1px solid #b8ccf5;margin-bottom:14px}
.notice.bad{background:#fde8e8;border-color:#f1b5b5}
.secret{font:15px ui-monospace,monospace;background:#fffbe6;border:1px dashed #c9a400;padding:10px;border-radius:6px;word-break:break-all}
.login{max-width:420px;margin:80px auto;background:#fff;border:1px solid #dde2ec;border-radius:12px;padding:28px}
.login input{width:100%;margin:6px 0 14px}
.muted{color:#5b6477}
svg text{font:12px system-ui,sans-serif;fill:#3b4356}
textarea{font:12px ui-monospace,monospace;padding:5px 8px;border:1px solid #b9c2d3;border-radius:6px}
fieldset.scopes{border:1px solid #dde2ec;border-radius:8px;margin:0 0 10px;padding:6px 10px;display:flex;flex-wrap:wrap;gap:4px 14px}
fieldset.scopes legend{font-size:12px;color:#5b6477}
fieldset.plain{border:0;margin:0;padding:0;min-width:0}
label.check{font-size:13px;color:#1d2330;display:inline-flex;gap:4px;align-items:center}
form.card.edit{margin:14px 0}
a.button{text-decoration:none;display:inline-block}
.pager{display:flex;gap:14px;align-items:center}
.wide{grid-column:1/-1}
h1 form.inline button{font-size:13px;vertical-align:middle}
.field-error{color:#b1182b;font-size:12px;max-width:28em}
`;
