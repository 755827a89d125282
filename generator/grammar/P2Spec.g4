/*
 * P2Spec.g4 -- the p2gen spec language: records, type equations (containers), cursors and
 * relationships between the elements of containers.
 *
 *     record account { id: u32; balance: i64 = 0; filler: char[84] = ""; home: ref branches; }
 *     container accounts of account
 *         = top2ds_qualify[hash[array[persistent]]]
 *         with hash(key = id, buckets = 1_048_576), persistent(file = "tpcb.db");
 *     cursor rich on accounts where balance > $min order by id;
 *     cursor richest on accounts where balance > $min order by balance desc;
 *     relationship holds one branches.accounts to many accounts.branch = ilist;
 *     relationship wrote one users.posts order by time desc to many posts.author = ilist;
 *     find accounts by id;
 *
 * `ref`, `one`, `many`, `to`, `asc`, `desc` and `find` are not reserved: they are names checked where they
 * appear (parser.py), so specs may keep using them as names.
 *
 * The grammar is LL(1) on purpose (fast in SLL mode with the Python runtime). Type names,
 * char lengths and string escapes are checked by generator/parser.py, not here; the lexer
 * turns every character it cannot use into an error token so that parser.py reports
 * lexical errors itself, in file order, with a position.
 *
 * Regenerate the Python files with scripts/regen_parser.sh (ANTLR 4.13.2).
 */
grammar P2Spec;

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------
spec
    : decl* EOF
    ;

decl
    : recordDecl
    | containerDecl
    | cursorDecl
    | relationshipDecl
    | findDecl
    ;

recordDecl
    : RECORD name=ID LBRACE fieldDecl* RBRACE
    ;

// `qty: u32 = 0;`: a default, what insert writes when the field is not given (parser.py
// and the checker take a number, a string or `none` for a ref field; `value` keeps it LL(1))
fieldDecl
    : name=ID COLON fieldType (ASSIGN dflt=value)? SEMI
    ;

// u32, char[10], text, or `ref <container>` (a reference to an element of a container)
// `ref` is not reserved (a field may be called ref); parser.py rejects a target after any
// other type name as the missing ';' it most likely is.
fieldType
    : name=ID (target=ID)? (LBRACK length=INT RBRACK)?
    ;

containerDecl
    : CONTAINER name=ID OF recordName=ID ASSIGN equation
      (WITH layerArgs (COMMA layerArgs)*)? SEMI
    ;

// A layer, its optional inline parameters, and the layer below it.
equation
    : name=ID (LPAREN paramList? RPAREN)? (LBRACK equation RBRACK)?
    ;

layerArgs
    : name=ID LPAREN paramList? RPAREN
    ;

paramList
    : param (COMMA param)*
    ;

param
    : name=ID ASSIGN value
    ;

// A parenthesised list of names is a composite key: key = (mat, kind).
value
    : INT
    | FLOAT
    | STRING
    | TRUE
    | FALSE
    | ID
    | LPAREN names+=ID (COMMA names+=ID)* RPAREN
    ;

// relationship parts one composites.parts to many atoms.part_of = ilist;
// The left role (composites.parts) holds the right side's elements (many: a collection),
// the right role (atoms.part_of) the left side's (one: a single reference). The equation
// names the layer that stores it (realm 'rel').
relationshipDecl
    : RELATIONSHIP name=ID left=relEnd toWord=ID right=relEnd ASSIGN equation SEMI
    ;

// `many users.posts order by time desc`: a collection role kept in the order of a field
// of its members (ascending unless `desc`; the direction is an ID, checked by parser.py).
// On the left end the optional direction and `to` are both IDs: the one place the parser
// looks two tokens ahead (`order by time to many` vs `order by time desc to many`).
relEnd
    : mult=ID containerName=ID DOT role=ID (ORDER BY orderField=ID (direction=ID)?)?
    ;

// `find accounts by id;`, `find quotes by (mat, kind);`: <prefix>_<container>_find_<key>
// exists whatever the equation (an index on the key serves it, else a scan). `find` is an
// ID, not a keyword (specs keep it as a name): parser.py checks the word.
findDecl
    : kw=ID containerName=ID BY findKey SEMI
    ;

findKey
    : names+=ID
    | LPAREN names+=ID (COMMA names+=ID)* RPAREN
    ;

// `order by FIELD` ascending, or `order by FIELD asc` / `order by FIELD desc`: the
// direction is an ID (asc and desc stay usable as names), checked by parser.py.
cursorDecl
    : CURSOR name=ID ON containerName=ID (WHERE orExpr)?
      (ORDER BY orderField=ID (direction=ID)?)? SEMI
    ;

orExpr
    : andExpr (OR andExpr)*
    ;

andExpr
    : notExpr (AND notExpr)*
    ;

notExpr
    : NOT notExpr
    | LPAREN orExpr RPAREN
    | comparison
    ;

comparison
    : left=operand op=(EQ | NE | LT | LE | GT | GE) right=operand
    ;

operand
    : ID
    | PARAM
    | INT
    | FLOAT
    | STRING
    ;

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------
// Keywords (reserved: they come before ID).
RECORD    : 'record' ;
CONTAINER : 'container' ;
OF        : 'of' ;
WITH      : 'with' ;
CURSOR    : 'cursor' ;
RELATIONSHIP : 'relationship' ;
ON        : 'on' ;
WHERE     : 'where' ;
ORDER     : 'order' ;
BY        : 'by' ;
AND       : 'and' ;
OR        : 'or' ;
NOT       : 'not' ;
TRUE      : 'true' ;
FALSE     : 'false' ;

LBRACE : '{' ;
RBRACE : '}' ;
LBRACK : '[' ;
RBRACK : ']' ;
LPAREN : '(' ;
RPAREN : ')' ;
COLON  : ':' ;
SEMI   : ';' ;
COMMA  : ',' ;
DOT    : '.' ;
EQ     : '==' ;
NE     : '!=' ;
LE     : '<=' ;
GE     : '>=' ;
LT     : '<' ;
GT     : '>' ;
ASSIGN : '=' ;

ID    : [A-Za-z_] [A-Za-z0-9_]* ;
PARAM : '$' [A-Za-z_] [A-Za-z0-9_]* ;

// Decimal or hex, optional leading '-', '_' between digits: -1, 0x1F, 1_048_576.
INT
    : '-'? DIGITS
    | '-'? '0' [xX] HEXDIGIT ('_'? HEXDIGIT)*
    ;

// 0.75, 1., .5, 1e6, -2.5E-3
FLOAT
    : '-'? DIGITS '.' DIGITS? EXPONENT?
    | '-'? '.' DIGITS EXPONENT?
    | '-'? DIGITS EXPONENT
    ;

// Any backslash escape is lexed; parser.py accepts only \" \\ \n \t.
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS            : [ \t\r\n\f]+ -> skip ;

// Error tokens: no parser rule uses them, so the parser stops at the first one and
// parser.py turns it into a lexical error message.
UNTERMINATED_STRING  : '"' (~["\\\r\n] | '\\' ~[\r\n])* '\\'? ;
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF ;
ERROR_CHAR           : . ;

fragment DIGITS   : [0-9] ('_'? [0-9])* ;
fragment HEXDIGIT : [0-9a-fA-F] ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
