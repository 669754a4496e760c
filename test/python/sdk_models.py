"""Reads the official Python SDK's pydantic models with the `ast` module (nothing is imported or run) and prints, for
every model class, the wire fields it declares as JSON:

  {"ModelName": [{"path": "contextManifest.bundles[].sha256", "required": true, "type": "str"}, ...], ...}

A field's wire name is its `serialization_alias`, else its `alias`, else its Python name (what `model_dump(by_alias=True)`
sends and what parsing takes). Nested models are walked into (`a.b`), lists as `a[]`, dicts as `a.*`. Types are short
tags: str, int, float, bool, datetime, any, enum(a|b), model names, with `|null` where None is allowed.

usage: sdk_models.py MODELS_DIR   (the SDK's hyperbrowser/models)
"""

import ast
import json
import sys
from pathlib import Path

ROOT = Path(sys.argv[1])
MODEL_BASES = {"BaseModel"}
SCALARS = {"str": "str", "int": "int", "float": "float", "bool": "bool", "datetime": "datetime", "date": "date",
           "Any": "any", "object": "any", "bytes": "bytes", "dict": "record", "list": "array"}

classes = {}  # name -> ast.ClassDef
aliases = {}  # module-level `Name = <type expression>`
enums = {}  # Enum subclasses: name -> values

for file in sorted(ROOT.rglob("*.py")):
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            if "Enum" in bases:
                enums[node.name] = sorted(
                    str(s.value.value) for s in node.body
                    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
                )
            else:
                classes[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            aliases[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            aliases[node.target.id] = node.value


def is_model(name, seen=()):
    if name in MODEL_BASES:
        return True
    cls = classes.get(name)
    if cls is None or name in seen:
        return False
    return any(is_model(b.id, seen + (name,)) for b in cls.bases if isinstance(b, ast.Name))


def own_fields(cls):
    """(wire name, annotation, required) for the fields a class body declares."""
    out = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        if name.startswith("_") or name == "model_config":
            continue
        ann = stmt.annotation
        if isinstance(ann, ast.Subscript) and getattr(ann.value, "id", None) == "ClassVar":
            continue
        wire, required, excluded = name, stmt.value is None, False
        call = stmt.value
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Field":
            kw = {k.arg: k.value for k in call.keywords}
            for key in ("serialization_alias", "alias"):
                v = kw.get(key)
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    wire = v.value
                    break
            has_default = "default" in kw or "default_factory" in kw or (
                call.args and not (isinstance(call.args[0], ast.Constant) and call.args[0].value is Ellipsis)
            )
            required = not has_default
            excluded = isinstance(kw.get("exclude"), ast.Constant) and kw["exclude"].value is True
        if not excluded:
            out.append((wire, ann, required))
    return out


def fields_of(name, seen=()):
    cls = classes[name]
    merged = {}
    for b in cls.bases:
        if isinstance(b, ast.Name) and b.id in classes and b.id not in seen and is_model(b.id):
            for wire, ann, req in fields_of(b.id, seen + (name,)):
                merged[wire] = (wire, ann, req)
    for wire, ann, req in own_fields(cls):
        merged[wire] = (wire, ann, req)
    return list(merged.values())


def describe(ann, depth=0):
    """(type tag, nullable, child) where child is ('model', name) | ('list', ann) | ('dict', ann) | None."""
    if depth > 20:
        return "any", False, None
    if isinstance(ann, ast.Constant):
        if ann.value is None:
            return "null", True, None
        if isinstance(ann.value, str):  # a forward reference
            return describe(ast.parse(ann.value, mode="eval").body, depth + 1)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return describe(ast.Subscript(value=ast.Name(id="Union"), slice=ast.Tuple(elts=[ann.left, ann.right])), depth + 1)
    if isinstance(ann, ast.Name) or isinstance(ann, ast.Attribute):
        name = ann.id if isinstance(ann, ast.Name) else ann.attr
        if name in SCALARS:
            return SCALARS[name], False, None
        if name in enums:
            return "enum(" + "|".join(enums[name]) + ")", False, None
        if name in classes and is_model(name):
            return name, False, ("model", name)
        if name in aliases:
            return describe(aliases[name], depth + 1)
        return name, False, None
    if isinstance(ann, ast.Subscript):
        head = getattr(ann.value, "id", getattr(ann.value, "attr", ""))
        args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if head == "Optional":
            tag, _, child = describe(args[0], depth + 1)
            return tag, True, child
        if head == "Union":
            parts = [describe(a, depth + 1) for a in args]
            nullable = any(p[1] for p in parts)
            tags = sorted({p[0] for p in parts if p[0] != "null"})
            children = [p[2] for p in parts if p[2] is not None]
            return "|".join(tags), nullable, children[0] if len(children) == 1 and len(tags) == 1 else (children[0] if children else None)
        if head in ("List", "list", "Sequence", "Set", "set", "Tuple", "tuple", "FrozenSet"):
            return "array", False, ("list", args[0])
        if head in ("Dict", "dict", "Mapping"):
            return "record", False, ("dict", args[1] if len(args) > 1 else None)
        if head == "Literal":
            values = sorted(str(a.value) for a in args if isinstance(a, ast.Constant))
            return "enum(" + "|".join(values) + ")", False, None
        if head == "Annotated":
            return describe(args[0], depth + 1)
        return head, False, None
    return "any", False, None


def walk(name, prefix, out, stack):
    for wire, ann, required in fields_of(name):
        path = f"{prefix}.{wire}" if prefix else wire
        emit(path, ann, required, out, stack)


def emit(path, ann, required, out, stack):
    tag, nullable, child = describe(ann)
    out.append({"path": path, "required": required, "type": tag + ("|null" if nullable else "")})
    while child is not None:
        kind, what = child
        if kind == "model":
            if what not in stack:
                walk(what, path, out, stack + (what,))
            return
        if kind == "list":
            path = f"{path}[]"
        else:
            path = f"{path}.*"
        if what is None:
            return
        tag, nullable, child = describe(what)
        out.append({"path": path, "required": True, "type": tag + ("|null" if nullable else "")})


result = {}
for name in sorted(classes):
    if is_model(name) and name not in MODEL_BASES:
        out = []
        walk(name, "", out, (name,))
        result[name] = out
json.dump(result, sys.stdout, indent=None, sort_keys=True)
