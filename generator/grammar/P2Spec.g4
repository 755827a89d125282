/*
 * P2Spec.g4 -- the p2gen spec language: records, type equations (containers) and cursors.
 *
 *     record account { id: u32; balance: i64; filler: char[84]; }
 *     container accounts of account
 *         = top2ds_qualify[hash[array[persistent]]]
 *         with hash(key = id, buckets = 1_048_576), persistent(file = "tpcb.db");
 *     cursor rich on accounts where balance > $min order by id;
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
    ;

recordDecl
    : RECORD name=ID LBRACE fieldDecl* RBRACE
    ;

fieldDecl
    : name=ID COLON fieldType SEMI
    ;

fieldType
    : name=ID (LBRACK length=INT RBRACK)?
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

value
    : INT
    | FLOAT
    | STRING
    | TRUE
    | FALSE
    | ID
    ;

cursorDecl
    : CURSOR name=ID ON containerName=ID (WHERE orExpr)? (ORDER BY orderField=ID)? SEMI
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
