# Generated from generator/grammar/P2Spec.g4 by ANTLR 4.13.2
# encoding: utf-8
from antlr4 import *
from io import StringIO
import sys
if sys.version_info[1] > 5:
	from typing import TextIO
else:
	from typing.io import TextIO

def serializedATN():
    return [
        4,1,43,246,2,0,7,0,2,1,7,1,2,2,7,2,2,3,7,3,2,4,7,4,2,5,7,5,2,6,7,
        6,2,7,7,7,2,8,7,8,2,9,7,9,2,10,7,10,2,11,7,11,2,12,7,12,2,13,7,13,
        2,14,7,14,2,15,7,15,2,16,7,16,2,17,7,17,2,18,7,18,2,19,7,19,2,20,
        7,20,1,0,5,0,44,8,0,10,0,12,0,47,9,0,1,0,1,0,1,1,1,1,1,1,1,1,1,1,
        3,1,56,8,1,1,2,1,2,1,2,1,2,5,2,62,8,2,10,2,12,2,65,9,2,1,2,1,2,1,
        3,1,3,1,3,1,3,1,3,3,3,74,8,3,1,3,1,3,1,4,1,4,3,4,80,8,4,1,4,1,4,
        1,4,3,4,85,8,4,1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,5,5,97,8,
        5,10,5,12,5,100,9,5,3,5,102,8,5,1,5,1,5,1,6,1,6,1,6,3,6,109,8,6,
        1,6,3,6,112,8,6,1,6,1,6,1,6,1,6,3,6,118,8,6,1,7,1,7,1,7,3,7,123,
        8,7,1,7,1,7,1,8,1,8,1,8,5,8,130,8,8,10,8,12,8,133,9,8,1,9,1,9,1,
        9,1,9,1,10,1,10,1,10,1,10,1,10,1,10,1,10,1,10,1,10,1,10,5,10,149,
        8,10,10,10,12,10,152,9,10,1,10,3,10,155,8,10,1,11,1,11,1,11,1,11,
        1,11,1,11,1,11,1,11,1,11,1,12,1,12,1,12,1,12,1,12,1,12,1,12,1,12,
        3,12,174,8,12,3,12,176,8,12,1,13,1,13,1,13,1,13,1,13,1,13,1,14,1,
        14,1,14,1,14,1,14,5,14,189,8,14,10,14,12,14,192,9,14,1,14,3,14,195,
        8,14,1,15,1,15,1,15,1,15,1,15,1,15,3,15,203,8,15,1,15,1,15,1,15,
        1,15,3,15,209,8,15,3,15,211,8,15,1,15,1,15,1,16,1,16,1,16,5,16,218,
        8,16,10,16,12,16,221,9,16,1,17,1,17,1,17,5,17,226,8,17,10,17,12,
        17,229,9,17,1,18,1,18,1,18,1,18,1,18,1,18,1,18,3,18,238,8,18,1,19,
        1,19,1,19,1,19,1,20,1,20,1,20,0,0,21,0,2,4,6,8,10,12,14,16,18,20,
        22,24,26,28,30,32,34,36,38,40,0,2,1,0,26,31,1,0,33,37,258,0,45,1,
        0,0,0,2,55,1,0,0,0,4,57,1,0,0,0,6,68,1,0,0,0,8,77,1,0,0,0,10,86,
        1,0,0,0,12,105,1,0,0,0,14,119,1,0,0,0,16,126,1,0,0,0,18,134,1,0,
        0,0,20,154,1,0,0,0,22,156,1,0,0,0,24,165,1,0,0,0,26,177,1,0,0,0,
        28,194,1,0,0,0,30,196,1,0,0,0,32,214,1,0,0,0,34,222,1,0,0,0,36,237,
        1,0,0,0,38,239,1,0,0,0,40,243,1,0,0,0,42,44,3,2,1,0,43,42,1,0,0,
        0,44,47,1,0,0,0,45,43,1,0,0,0,45,46,1,0,0,0,46,48,1,0,0,0,47,45,
        1,0,0,0,48,49,5,0,0,1,49,1,1,0,0,0,50,56,3,4,2,0,51,56,3,10,5,0,
        52,56,3,30,15,0,53,56,3,22,11,0,54,56,3,26,13,0,55,50,1,0,0,0,55,
        51,1,0,0,0,55,52,1,0,0,0,55,53,1,0,0,0,55,54,1,0,0,0,56,3,1,0,0,
        0,57,58,5,1,0,0,58,59,5,33,0,0,59,63,5,16,0,0,60,62,3,6,3,0,61,60,
        1,0,0,0,62,65,1,0,0,0,63,61,1,0,0,0,63,64,1,0,0,0,64,66,1,0,0,0,
        65,63,1,0,0,0,66,67,5,17,0,0,67,5,1,0,0,0,68,69,5,33,0,0,69,70,5,
        22,0,0,70,73,3,8,4,0,71,72,5,32,0,0,72,74,3,20,10,0,73,71,1,0,0,
        0,73,74,1,0,0,0,74,75,1,0,0,0,75,76,5,23,0,0,76,7,1,0,0,0,77,79,
        5,33,0,0,78,80,5,33,0,0,79,78,1,0,0,0,79,80,1,0,0,0,80,84,1,0,0,
        0,81,82,5,18,0,0,82,83,5,35,0,0,83,85,5,19,0,0,84,81,1,0,0,0,84,
        85,1,0,0,0,85,9,1,0,0,0,86,87,5,2,0,0,87,88,5,33,0,0,88,89,5,3,0,
        0,89,90,5,33,0,0,90,91,5,32,0,0,91,101,3,12,6,0,92,93,5,4,0,0,93,
        98,3,14,7,0,94,95,5,24,0,0,95,97,3,14,7,0,96,94,1,0,0,0,97,100,1,
        0,0,0,98,96,1,0,0,0,98,99,1,0,0,0,99,102,1,0,0,0,100,98,1,0,0,0,
        101,92,1,0,0,0,101,102,1,0,0,0,102,103,1,0,0,0,103,104,5,23,0,0,
        104,11,1,0,0,0,105,111,5,33,0,0,106,108,5,20,0,0,107,109,3,16,8,
        0,108,107,1,0,0,0,108,109,1,0,0,0,109,110,1,0,0,0,110,112,5,21,0,
        0,111,106,1,0,0,0,111,112,1,0,0,0,112,117,1,0,0,0,113,114,5,18,0,
        0,114,115,3,12,6,0,115,116,5,19,0,0,116,118,1,0,0,0,117,113,1,0,
        0,0,117,118,1,0,0,0,118,13,1,0,0,0,119,120,5,33,0,0,120,122,5,20,
        0,0,121,123,3,16,8,0,122,121,1,0,0,0,122,123,1,0,0,0,123,124,1,0,
        0,0,124,125,5,21,0,0,125,15,1,0,0,0,126,131,3,18,9,0,127,128,5,24,
        0,0,128,130,3,18,9,0,129,127,1,0,0,0,130,133,1,0,0,0,131,129,1,0,
        0,0,131,132,1,0,0,0,132,17,1,0,0,0,133,131,1,0,0,0,134,135,5,33,
        0,0,135,136,5,32,0,0,136,137,3,20,10,0,137,19,1,0,0,0,138,155,5,
        35,0,0,139,155,5,36,0,0,140,155,5,37,0,0,141,155,5,14,0,0,142,155,
        5,15,0,0,143,155,5,33,0,0,144,145,5,20,0,0,145,150,5,33,0,0,146,
        147,5,24,0,0,147,149,5,33,0,0,148,146,1,0,0,0,149,152,1,0,0,0,150,
        148,1,0,0,0,150,151,1,0,0,0,151,153,1,0,0,0,152,150,1,0,0,0,153,
        155,5,21,0,0,154,138,1,0,0,0,154,139,1,0,0,0,154,140,1,0,0,0,154,
        141,1,0,0,0,154,142,1,0,0,0,154,143,1,0,0,0,154,144,1,0,0,0,155,
        21,1,0,0,0,156,157,5,6,0,0,157,158,5,33,0,0,158,159,3,24,12,0,159,
        160,5,33,0,0,160,161,3,24,12,0,161,162,5,32,0,0,162,163,3,12,6,0,
        163,164,5,23,0,0,164,23,1,0,0,0,165,166,5,33,0,0,166,167,5,33,0,
        0,167,168,5,25,0,0,168,175,5,33,0,0,169,170,5,9,0,0,170,171,5,10,
        0,0,171,173,5,33,0,0,172,174,5,33,0,0,173,172,1,0,0,0,173,174,1,
        0,0,0,174,176,1,0,0,0,175,169,1,0,0,0,175,176,1,0,0,0,176,25,1,0,
        0,0,177,178,5,33,0,0,178,179,5,33,0,0,179,180,5,10,0,0,180,181,3,
        28,14,0,181,182,5,23,0,0,182,27,1,0,0,0,183,195,5,33,0,0,184,185,
        5,20,0,0,185,190,5,33,0,0,186,187,5,24,0,0,187,189,5,33,0,0,188,
        186,1,0,0,0,189,192,1,0,0,0,190,188,1,0,0,0,190,191,1,0,0,0,191,
        193,1,0,0,0,192,190,1,0,0,0,193,195,5,21,0,0,194,183,1,0,0,0,194,
        184,1,0,0,0,195,29,1,0,0,0,196,197,5,5,0,0,197,198,5,33,0,0,198,
        199,5,7,0,0,199,202,5,33,0,0,200,201,5,8,0,0,201,203,3,32,16,0,202,
        200,1,0,0,0,202,203,1,0,0,0,203,210,1,0,0,0,204,205,5,9,0,0,205,
        206,5,10,0,0,206,208,5,33,0,0,207,209,5,33,0,0,208,207,1,0,0,0,208,
        209,1,0,0,0,209,211,1,0,0,0,210,204,1,0,0,0,210,211,1,0,0,0,211,
        212,1,0,0,0,212,213,5,23,0,0,213,31,1,0,0,0,214,219,3,34,17,0,215,
        216,5,12,0,0,216,218,3,34,17,0,217,215,1,0,0,0,218,221,1,0,0,0,219,
        217,1,0,0,0,219,220,1,0,0,0,220,33,1,0,0,0,221,219,1,0,0,0,222,227,
        3,36,18,0,223,224,5,11,0,0,224,226,3,36,18,0,225,223,1,0,0,0,226,
        229,1,0,0,0,227,225,1,0,0,0,227,228,1,0,0,0,228,35,1,0,0,0,229,227,
        1,0,0,0,230,231,5,13,0,0,231,238,3,36,18,0,232,233,5,20,0,0,233,
        234,3,32,16,0,234,235,5,21,0,0,235,238,1,0,0,0,236,238,3,38,19,0,
        237,230,1,0,0,0,237,232,1,0,0,0,237,236,1,0,0,0,238,37,1,0,0,0,239,
        240,3,40,20,0,240,241,7,0,0,0,241,242,3,40,20,0,242,39,1,0,0,0,243,
        244,7,1,0,0,244,41,1,0,0,0,25,45,55,63,73,79,84,98,101,108,111,117,
        122,131,150,154,173,175,190,194,202,208,210,219,227,237
    ]

class P2SpecParser ( Parser ):

    grammarFileName = "P2Spec.g4"

    atn = ATNDeserializer().deserialize(serializedATN())

    decisionsToDFA = [ DFA(ds, i) for i, ds in enumerate(atn.decisionToState) ]

    sharedContextCache = PredictionContextCache()

    literalNames = [ "<INVALID>", "'record'", "'container'", "'of'", "'with'", 
                     "'cursor'", "'relationship'", "'on'", "'where'", "'order'", 
                     "'by'", "'and'", "'or'", "'not'", "'true'", "'false'", 
                     "'{'", "'}'", "'['", "']'", "'('", "')'", "':'", "';'", 
                     "','", "'.'", "'=='", "'!='", "'<='", "'>='", "'<'", 
                     "'>'", "'='" ]

    symbolicNames = [ "<INVALID>", "RECORD", "CONTAINER", "OF", "WITH", 
                      "CURSOR", "RELATIONSHIP", "ON", "WHERE", "ORDER", 
                      "BY", "AND", "OR", "NOT", "TRUE", "FALSE", "LBRACE", 
                      "RBRACE", "LBRACK", "RBRACK", "LPAREN", "RPAREN", 
                      "COLON", "SEMI", "COMMA", "DOT", "EQ", "NE", "LE", 
                      "GE", "LT", "GT", "ASSIGN", "ID", "PARAM", "INT", 
                      "FLOAT", "STRING", "LINE_COMMENT", "BLOCK_COMMENT", 
                      "WS", "UNTERMINATED_STRING", "UNTERMINATED_COMMENT", 
                      "ERROR_CHAR" ]

    RULE_spec = 0
    RULE_decl = 1
    RULE_recordDecl = 2
    RULE_fieldDecl = 3
    RULE_fieldType = 4
    RULE_containerDecl = 5
    RULE_equation = 6
    RULE_layerArgs = 7
    RULE_paramList = 8
    RULE_param = 9
    RULE_value = 10
    RULE_relationshipDecl = 11
    RULE_relEnd = 12
    RULE_findDecl = 13
    RULE_findKey = 14
    RULE_cursorDecl = 15
    RULE_orExpr = 16
    RULE_andExpr = 17
    RULE_notExpr = 18
    RULE_comparison = 19
    RULE_operand = 20

    ruleNames =  [ "spec", "decl", "recordDecl", "fieldDecl", "fieldType", 
                   "containerDecl", "equation", "layerArgs", "paramList", 
                   "param", "value", "relationshipDecl", "relEnd", "findDecl", 
                   "findKey", "cursorDecl", "orExpr", "andExpr", "notExpr", 
                   "comparison", "operand" ]

    EOF = Token.EOF
    RECORD=1
    CONTAINER=2
    OF=3
    WITH=4
    CURSOR=5
    RELATIONSHIP=6
    ON=7
    WHERE=8
    ORDER=9
    BY=10
    AND=11
    OR=12
    NOT=13
    TRUE=14
    FALSE=15
    LBRACE=16
    RBRACE=17
    LBRACK=18
    RBRACK=19
    LPAREN=20
    RPAREN=21
    COLON=22
    SEMI=23
    COMMA=24
    DOT=25
    EQ=26
    NE=27
    LE=28
    GE=29
    LT=30
    GT=31
    ASSIGN=32
    ID=33
    PARAM=34
    INT=35
    FLOAT=36
    STRING=37
    LINE_COMMENT=38
    BLOCK_COMMENT=39
    WS=40
    UNTERMINATED_STRING=41
    UNTERMINATED_COMMENT=42
    ERROR_CHAR=43

    def __init__(self, input:TokenStream, output:TextIO = sys.stdout):
        super().__init__(input, output)
        self.checkVersion("4.13.2")
        self._interp = ParserATNSimulator(self, self.atn, self.decisionsToDFA, self.sharedContextCache)
        self._predicates = None




    class SpecContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def EOF(self):
            return self.getToken(P2SpecParser.EOF, 0)

        def decl(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.DeclContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.DeclContext,i)


        def getRuleIndex(self):
            return P2SpecParser.RULE_spec

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitSpec" ):
                return visitor.visitSpec(self)
            else:
                return visitor.visitChildren(self)




    def spec(self):

        localctx = P2SpecParser.SpecContext(self, self._ctx, self.state)
        self.enterRule(localctx, 0, self.RULE_spec)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 45
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 8589934694) != 0):
                self.state = 42
                self.decl()
                self.state = 47
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 48
            self.match(P2SpecParser.EOF)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class DeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def recordDecl(self):
            return self.getTypedRuleContext(P2SpecParser.RecordDeclContext,0)


        def containerDecl(self):
            return self.getTypedRuleContext(P2SpecParser.ContainerDeclContext,0)


        def cursorDecl(self):
            return self.getTypedRuleContext(P2SpecParser.CursorDeclContext,0)


        def relationshipDecl(self):
            return self.getTypedRuleContext(P2SpecParser.RelationshipDeclContext,0)


        def findDecl(self):
            return self.getTypedRuleContext(P2SpecParser.FindDeclContext,0)


        def getRuleIndex(self):
            return P2SpecParser.RULE_decl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitDecl" ):
                return visitor.visitDecl(self)
            else:
                return visitor.visitChildren(self)




    def decl(self):

        localctx = P2SpecParser.DeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 2, self.RULE_decl)
        try:
            self.state = 55
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [1]:
                self.enterOuterAlt(localctx, 1)
                self.state = 50
                self.recordDecl()
                pass
            elif token in [2]:
                self.enterOuterAlt(localctx, 2)
                self.state = 51
                self.containerDecl()
                pass
            elif token in [5]:
                self.enterOuterAlt(localctx, 3)
                self.state = 52
                self.cursorDecl()
                pass
            elif token in [6]:
                self.enterOuterAlt(localctx, 4)
                self.state = 53
                self.relationshipDecl()
                pass
            elif token in [33]:
                self.enterOuterAlt(localctx, 5)
                self.state = 54
                self.findDecl()
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class RecordDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token

        def RECORD(self):
            return self.getToken(P2SpecParser.RECORD, 0)

        def LBRACE(self):
            return self.getToken(P2SpecParser.LBRACE, 0)

        def RBRACE(self):
            return self.getToken(P2SpecParser.RBRACE, 0)

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def fieldDecl(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.FieldDeclContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.FieldDeclContext,i)


        def getRuleIndex(self):
            return P2SpecParser.RULE_recordDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitRecordDecl" ):
                return visitor.visitRecordDecl(self)
            else:
                return visitor.visitChildren(self)




    def recordDecl(self):

        localctx = P2SpecParser.RecordDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 4, self.RULE_recordDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 57
            self.match(P2SpecParser.RECORD)
            self.state = 58
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 59
            self.match(P2SpecParser.LBRACE)
            self.state = 63
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==33:
                self.state = 60
                self.fieldDecl()
                self.state = 65
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 66
            self.match(P2SpecParser.RBRACE)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FieldDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.dflt = None # ValueContext

        def COLON(self):
            return self.getToken(P2SpecParser.COLON, 0)

        def fieldType(self):
            return self.getTypedRuleContext(P2SpecParser.FieldTypeContext,0)


        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def ASSIGN(self):
            return self.getToken(P2SpecParser.ASSIGN, 0)

        def value(self):
            return self.getTypedRuleContext(P2SpecParser.ValueContext,0)


        def getRuleIndex(self):
            return P2SpecParser.RULE_fieldDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFieldDecl" ):
                return visitor.visitFieldDecl(self)
            else:
                return visitor.visitChildren(self)




    def fieldDecl(self):

        localctx = P2SpecParser.FieldDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 6, self.RULE_fieldDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 68
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 69
            self.match(P2SpecParser.COLON)
            self.state = 70
            self.fieldType()
            self.state = 73
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==32:
                self.state = 71
                self.match(P2SpecParser.ASSIGN)
                self.state = 72
                localctx.dflt = self.value()


            self.state = 75
            self.match(P2SpecParser.SEMI)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FieldTypeContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.target = None # Token
            self.length = None # Token

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def LBRACK(self):
            return self.getToken(P2SpecParser.LBRACK, 0)

        def RBRACK(self):
            return self.getToken(P2SpecParser.RBRACK, 0)

        def INT(self):
            return self.getToken(P2SpecParser.INT, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_fieldType

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFieldType" ):
                return visitor.visitFieldType(self)
            else:
                return visitor.visitChildren(self)




    def fieldType(self):

        localctx = P2SpecParser.FieldTypeContext(self, self._ctx, self.state)
        self.enterRule(localctx, 8, self.RULE_fieldType)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 77
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 79
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==33:
                self.state = 78
                localctx.target = self.match(P2SpecParser.ID)


            self.state = 84
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==18:
                self.state = 81
                self.match(P2SpecParser.LBRACK)
                self.state = 82
                localctx.length = self.match(P2SpecParser.INT)
                self.state = 83
                self.match(P2SpecParser.RBRACK)


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ContainerDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.recordName = None # Token

        def CONTAINER(self):
            return self.getToken(P2SpecParser.CONTAINER, 0)

        def OF(self):
            return self.getToken(P2SpecParser.OF, 0)

        def ASSIGN(self):
            return self.getToken(P2SpecParser.ASSIGN, 0)

        def equation(self):
            return self.getTypedRuleContext(P2SpecParser.EquationContext,0)


        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def WITH(self):
            return self.getToken(P2SpecParser.WITH, 0)

        def layerArgs(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.LayerArgsContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.LayerArgsContext,i)


        def COMMA(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.COMMA)
            else:
                return self.getToken(P2SpecParser.COMMA, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_containerDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitContainerDecl" ):
                return visitor.visitContainerDecl(self)
            else:
                return visitor.visitChildren(self)




    def containerDecl(self):

        localctx = P2SpecParser.ContainerDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 10, self.RULE_containerDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 86
            self.match(P2SpecParser.CONTAINER)
            self.state = 87
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 88
            self.match(P2SpecParser.OF)
            self.state = 89
            localctx.recordName = self.match(P2SpecParser.ID)
            self.state = 90
            self.match(P2SpecParser.ASSIGN)
            self.state = 91
            self.equation()
            self.state = 101
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==4:
                self.state = 92
                self.match(P2SpecParser.WITH)
                self.state = 93
                self.layerArgs()
                self.state = 98
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                while _la==24:
                    self.state = 94
                    self.match(P2SpecParser.COMMA)
                    self.state = 95
                    self.layerArgs()
                    self.state = 100
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)



            self.state = 103
            self.match(P2SpecParser.SEMI)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class EquationContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def LPAREN(self):
            return self.getToken(P2SpecParser.LPAREN, 0)

        def RPAREN(self):
            return self.getToken(P2SpecParser.RPAREN, 0)

        def LBRACK(self):
            return self.getToken(P2SpecParser.LBRACK, 0)

        def equation(self):
            return self.getTypedRuleContext(P2SpecParser.EquationContext,0)


        def RBRACK(self):
            return self.getToken(P2SpecParser.RBRACK, 0)

        def paramList(self):
            return self.getTypedRuleContext(P2SpecParser.ParamListContext,0)


        def getRuleIndex(self):
            return P2SpecParser.RULE_equation

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitEquation" ):
                return visitor.visitEquation(self)
            else:
                return visitor.visitChildren(self)




    def equation(self):

        localctx = P2SpecParser.EquationContext(self, self._ctx, self.state)
        self.enterRule(localctx, 12, self.RULE_equation)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 105
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 111
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==20:
                self.state = 106
                self.match(P2SpecParser.LPAREN)
                self.state = 108
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==33:
                    self.state = 107
                    self.paramList()


                self.state = 110
                self.match(P2SpecParser.RPAREN)


            self.state = 117
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==18:
                self.state = 113
                self.match(P2SpecParser.LBRACK)
                self.state = 114
                self.equation()
                self.state = 115
                self.match(P2SpecParser.RBRACK)


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class LayerArgsContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token

        def LPAREN(self):
            return self.getToken(P2SpecParser.LPAREN, 0)

        def RPAREN(self):
            return self.getToken(P2SpecParser.RPAREN, 0)

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def paramList(self):
            return self.getTypedRuleContext(P2SpecParser.ParamListContext,0)


        def getRuleIndex(self):
            return P2SpecParser.RULE_layerArgs

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitLayerArgs" ):
                return visitor.visitLayerArgs(self)
            else:
                return visitor.visitChildren(self)




    def layerArgs(self):

        localctx = P2SpecParser.LayerArgsContext(self, self._ctx, self.state)
        self.enterRule(localctx, 14, self.RULE_layerArgs)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 119
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 120
            self.match(P2SpecParser.LPAREN)
            self.state = 122
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==33:
                self.state = 121
                self.paramList()


            self.state = 124
            self.match(P2SpecParser.RPAREN)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ParamListContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def param(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.ParamContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.ParamContext,i)


        def COMMA(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.COMMA)
            else:
                return self.getToken(P2SpecParser.COMMA, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_paramList

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitParamList" ):
                return visitor.visitParamList(self)
            else:
                return visitor.visitChildren(self)




    def paramList(self):

        localctx = P2SpecParser.ParamListContext(self, self._ctx, self.state)
        self.enterRule(localctx, 16, self.RULE_paramList)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 126
            self.param()
            self.state = 131
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==24:
                self.state = 127
                self.match(P2SpecParser.COMMA)
                self.state = 128
                self.param()
                self.state = 133
                self._errHandler.sync(self)
                _la = self._input.LA(1)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ParamContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token

        def ASSIGN(self):
            return self.getToken(P2SpecParser.ASSIGN, 0)

        def value(self):
            return self.getTypedRuleContext(P2SpecParser.ValueContext,0)


        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_param

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitParam" ):
                return visitor.visitParam(self)
            else:
                return visitor.visitChildren(self)




    def param(self):

        localctx = P2SpecParser.ParamContext(self, self._ctx, self.state)
        self.enterRule(localctx, 18, self.RULE_param)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 134
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 135
            self.match(P2SpecParser.ASSIGN)
            self.state = 136
            self.value()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ValueContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self._ID = None # Token
            self.names = list() # of Tokens

        def INT(self):
            return self.getToken(P2SpecParser.INT, 0)

        def FLOAT(self):
            return self.getToken(P2SpecParser.FLOAT, 0)

        def STRING(self):
            return self.getToken(P2SpecParser.STRING, 0)

        def TRUE(self):
            return self.getToken(P2SpecParser.TRUE, 0)

        def FALSE(self):
            return self.getToken(P2SpecParser.FALSE, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def LPAREN(self):
            return self.getToken(P2SpecParser.LPAREN, 0)

        def RPAREN(self):
            return self.getToken(P2SpecParser.RPAREN, 0)

        def COMMA(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.COMMA)
            else:
                return self.getToken(P2SpecParser.COMMA, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_value

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitValue" ):
                return visitor.visitValue(self)
            else:
                return visitor.visitChildren(self)




    def value(self):

        localctx = P2SpecParser.ValueContext(self, self._ctx, self.state)
        self.enterRule(localctx, 20, self.RULE_value)
        self._la = 0 # Token type
        try:
            self.state = 154
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [35]:
                self.enterOuterAlt(localctx, 1)
                self.state = 138
                self.match(P2SpecParser.INT)
                pass
            elif token in [36]:
                self.enterOuterAlt(localctx, 2)
                self.state = 139
                self.match(P2SpecParser.FLOAT)
                pass
            elif token in [37]:
                self.enterOuterAlt(localctx, 3)
                self.state = 140
                self.match(P2SpecParser.STRING)
                pass
            elif token in [14]:
                self.enterOuterAlt(localctx, 4)
                self.state = 141
                self.match(P2SpecParser.TRUE)
                pass
            elif token in [15]:
                self.enterOuterAlt(localctx, 5)
                self.state = 142
                self.match(P2SpecParser.FALSE)
                pass
            elif token in [33]:
                self.enterOuterAlt(localctx, 6)
                self.state = 143
                self.match(P2SpecParser.ID)
                pass
            elif token in [20]:
                self.enterOuterAlt(localctx, 7)
                self.state = 144
                self.match(P2SpecParser.LPAREN)
                self.state = 145
                localctx._ID = self.match(P2SpecParser.ID)
                localctx.names.append(localctx._ID)
                self.state = 150
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                while _la==24:
                    self.state = 146
                    self.match(P2SpecParser.COMMA)
                    self.state = 147
                    localctx._ID = self.match(P2SpecParser.ID)
                    localctx.names.append(localctx._ID)
                    self.state = 152
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)

                self.state = 153
                self.match(P2SpecParser.RPAREN)
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class RelationshipDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.left = None # RelEndContext
            self.toWord = None # Token
            self.right = None # RelEndContext

        def RELATIONSHIP(self):
            return self.getToken(P2SpecParser.RELATIONSHIP, 0)

        def ASSIGN(self):
            return self.getToken(P2SpecParser.ASSIGN, 0)

        def equation(self):
            return self.getTypedRuleContext(P2SpecParser.EquationContext,0)


        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def relEnd(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.RelEndContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.RelEndContext,i)


        def getRuleIndex(self):
            return P2SpecParser.RULE_relationshipDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitRelationshipDecl" ):
                return visitor.visitRelationshipDecl(self)
            else:
                return visitor.visitChildren(self)




    def relationshipDecl(self):

        localctx = P2SpecParser.RelationshipDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 22, self.RULE_relationshipDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 156
            self.match(P2SpecParser.RELATIONSHIP)
            self.state = 157
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 158
            localctx.left = self.relEnd()
            self.state = 159
            localctx.toWord = self.match(P2SpecParser.ID)
            self.state = 160
            localctx.right = self.relEnd()
            self.state = 161
            self.match(P2SpecParser.ASSIGN)
            self.state = 162
            self.equation()
            self.state = 163
            self.match(P2SpecParser.SEMI)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class RelEndContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.mult = None # Token
            self.containerName = None # Token
            self.role = None # Token
            self.orderField = None # Token
            self.direction = None # Token

        def DOT(self):
            return self.getToken(P2SpecParser.DOT, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def ORDER(self):
            return self.getToken(P2SpecParser.ORDER, 0)

        def BY(self):
            return self.getToken(P2SpecParser.BY, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_relEnd

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitRelEnd" ):
                return visitor.visitRelEnd(self)
            else:
                return visitor.visitChildren(self)




    def relEnd(self):

        localctx = P2SpecParser.RelEndContext(self, self._ctx, self.state)
        self.enterRule(localctx, 24, self.RULE_relEnd)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 165
            localctx.mult = self.match(P2SpecParser.ID)
            self.state = 166
            localctx.containerName = self.match(P2SpecParser.ID)
            self.state = 167
            self.match(P2SpecParser.DOT)
            self.state = 168
            localctx.role = self.match(P2SpecParser.ID)
            self.state = 175
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==9:
                self.state = 169
                self.match(P2SpecParser.ORDER)
                self.state = 170
                self.match(P2SpecParser.BY)
                self.state = 171
                localctx.orderField = self.match(P2SpecParser.ID)
                self.state = 173
                self._errHandler.sync(self)
                la_ = self._interp.adaptivePredict(self._input,15,self._ctx)
                if la_ == 1:
                    self.state = 172
                    localctx.direction = self.match(P2SpecParser.ID)




        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FindDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.kw = None # Token
            self.containerName = None # Token

        def BY(self):
            return self.getToken(P2SpecParser.BY, 0)

        def findKey(self):
            return self.getTypedRuleContext(P2SpecParser.FindKeyContext,0)


        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_findDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFindDecl" ):
                return visitor.visitFindDecl(self)
            else:
                return visitor.visitChildren(self)




    def findDecl(self):

        localctx = P2SpecParser.FindDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 26, self.RULE_findDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 177
            localctx.kw = self.match(P2SpecParser.ID)
            self.state = 178
            localctx.containerName = self.match(P2SpecParser.ID)
            self.state = 179
            self.match(P2SpecParser.BY)
            self.state = 180
            self.findKey()
            self.state = 181
            self.match(P2SpecParser.SEMI)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FindKeyContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self._ID = None # Token
            self.names = list() # of Tokens

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def LPAREN(self):
            return self.getToken(P2SpecParser.LPAREN, 0)

        def RPAREN(self):
            return self.getToken(P2SpecParser.RPAREN, 0)

        def COMMA(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.COMMA)
            else:
                return self.getToken(P2SpecParser.COMMA, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_findKey

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFindKey" ):
                return visitor.visitFindKey(self)
            else:
                return visitor.visitChildren(self)




    def findKey(self):

        localctx = P2SpecParser.FindKeyContext(self, self._ctx, self.state)
        self.enterRule(localctx, 28, self.RULE_findKey)
        self._la = 0 # Token type
        try:
            self.state = 194
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [33]:
                self.enterOuterAlt(localctx, 1)
                self.state = 183
                localctx._ID = self.match(P2SpecParser.ID)
                localctx.names.append(localctx._ID)
                pass
            elif token in [20]:
                self.enterOuterAlt(localctx, 2)
                self.state = 184
                self.match(P2SpecParser.LPAREN)
                self.state = 185
                localctx._ID = self.match(P2SpecParser.ID)
                localctx.names.append(localctx._ID)
                self.state = 190
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                while _la==24:
                    self.state = 186
                    self.match(P2SpecParser.COMMA)
                    self.state = 187
                    localctx._ID = self.match(P2SpecParser.ID)
                    localctx.names.append(localctx._ID)
                    self.state = 192
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)

                self.state = 193
                self.match(P2SpecParser.RPAREN)
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class CursorDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.containerName = None # Token
            self.orderField = None # Token
            self.direction = None # Token

        def CURSOR(self):
            return self.getToken(P2SpecParser.CURSOR, 0)

        def ON(self):
            return self.getToken(P2SpecParser.ON, 0)

        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.ID)
            else:
                return self.getToken(P2SpecParser.ID, i)

        def WHERE(self):
            return self.getToken(P2SpecParser.WHERE, 0)

        def orExpr(self):
            return self.getTypedRuleContext(P2SpecParser.OrExprContext,0)


        def ORDER(self):
            return self.getToken(P2SpecParser.ORDER, 0)

        def BY(self):
            return self.getToken(P2SpecParser.BY, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_cursorDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitCursorDecl" ):
                return visitor.visitCursorDecl(self)
            else:
                return visitor.visitChildren(self)




    def cursorDecl(self):

        localctx = P2SpecParser.CursorDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 30, self.RULE_cursorDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 196
            self.match(P2SpecParser.CURSOR)
            self.state = 197
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 198
            self.match(P2SpecParser.ON)
            self.state = 199
            localctx.containerName = self.match(P2SpecParser.ID)
            self.state = 202
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==8:
                self.state = 200
                self.match(P2SpecParser.WHERE)
                self.state = 201
                self.orExpr()


            self.state = 210
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==9:
                self.state = 204
                self.match(P2SpecParser.ORDER)
                self.state = 205
                self.match(P2SpecParser.BY)
                self.state = 206
                localctx.orderField = self.match(P2SpecParser.ID)
                self.state = 208
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==33:
                    self.state = 207
                    localctx.direction = self.match(P2SpecParser.ID)




            self.state = 212
            self.match(P2SpecParser.SEMI)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class OrExprContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def andExpr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.AndExprContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.AndExprContext,i)


        def OR(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.OR)
            else:
                return self.getToken(P2SpecParser.OR, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_orExpr

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitOrExpr" ):
                return visitor.visitOrExpr(self)
            else:
                return visitor.visitChildren(self)




    def orExpr(self):

        localctx = P2SpecParser.OrExprContext(self, self._ctx, self.state)
        self.enterRule(localctx, 32, self.RULE_orExpr)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 214
            self.andExpr()
            self.state = 219
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==12:
                self.state = 215
                self.match(P2SpecParser.OR)
                self.state = 216
                self.andExpr()
                self.state = 221
                self._errHandler.sync(self)
                _la = self._input.LA(1)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class AndExprContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def notExpr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.NotExprContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.NotExprContext,i)


        def AND(self, i:int=None):
            if i is None:
                return self.getTokens(P2SpecParser.AND)
            else:
                return self.getToken(P2SpecParser.AND, i)

        def getRuleIndex(self):
            return P2SpecParser.RULE_andExpr

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitAndExpr" ):
                return visitor.visitAndExpr(self)
            else:
                return visitor.visitChildren(self)




    def andExpr(self):

        localctx = P2SpecParser.AndExprContext(self, self._ctx, self.state)
        self.enterRule(localctx, 34, self.RULE_andExpr)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 222
            self.notExpr()
            self.state = 227
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==11:
                self.state = 223
                self.match(P2SpecParser.AND)
                self.state = 224
                self.notExpr()
                self.state = 229
                self._errHandler.sync(self)
                _la = self._input.LA(1)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class NotExprContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def NOT(self):
            return self.getToken(P2SpecParser.NOT, 0)

        def notExpr(self):
            return self.getTypedRuleContext(P2SpecParser.NotExprContext,0)


        def LPAREN(self):
            return self.getToken(P2SpecParser.LPAREN, 0)

        def orExpr(self):
            return self.getTypedRuleContext(P2SpecParser.OrExprContext,0)


        def RPAREN(self):
            return self.getToken(P2SpecParser.RPAREN, 0)

        def comparison(self):
            return self.getTypedRuleContext(P2SpecParser.ComparisonContext,0)


        def getRuleIndex(self):
            return P2SpecParser.RULE_notExpr

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitNotExpr" ):
                return visitor.visitNotExpr(self)
            else:
                return visitor.visitChildren(self)




    def notExpr(self):

        localctx = P2SpecParser.NotExprContext(self, self._ctx, self.state)
        self.enterRule(localctx, 36, self.RULE_notExpr)
        try:
            self.state = 237
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [13]:
                self.enterOuterAlt(localctx, 1)
                self.state = 230
                self.match(P2SpecParser.NOT)
                self.state = 231
                self.notExpr()
                pass
            elif token in [20]:
                self.enterOuterAlt(localctx, 2)
                self.state = 232
                self.match(P2SpecParser.LPAREN)
                self.state = 233
                self.orExpr()
                self.state = 234
                self.match(P2SpecParser.RPAREN)
                pass
            elif token in [33, 34, 35, 36, 37]:
                self.enterOuterAlt(localctx, 3)
                self.state = 236
                self.comparison()
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ComparisonContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.left = None # OperandContext
            self.op = None # Token
            self.right = None # OperandContext

        def operand(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(P2SpecParser.OperandContext)
            else:
                return self.getTypedRuleContext(P2SpecParser.OperandContext,i)


        def EQ(self):
            return self.getToken(P2SpecParser.EQ, 0)

        def NE(self):
            return self.getToken(P2SpecParser.NE, 0)

        def LT(self):
            return self.getToken(P2SpecParser.LT, 0)

        def LE(self):
            return self.getToken(P2SpecParser.LE, 0)

        def GT(self):
            return self.getToken(P2SpecParser.GT, 0)

        def GE(self):
            return self.getToken(P2SpecParser.GE, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_comparison

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitComparison" ):
                return visitor.visitComparison(self)
            else:
                return visitor.visitChildren(self)




    def comparison(self):

        localctx = P2SpecParser.ComparisonContext(self, self._ctx, self.state)
        self.enterRule(localctx, 38, self.RULE_comparison)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 239
            localctx.left = self.operand()
            self.state = 240
            localctx.op = self._input.LT(1)
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 4227858432) != 0)):
                localctx.op = self._errHandler.recoverInline(self)
            else:
                self._errHandler.reportMatch(self)
                self.consume()
            self.state = 241
            localctx.right = self.operand()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class OperandContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

        def PARAM(self):
            return self.getToken(P2SpecParser.PARAM, 0)

        def INT(self):
            return self.getToken(P2SpecParser.INT, 0)

        def FLOAT(self):
            return self.getToken(P2SpecParser.FLOAT, 0)

        def STRING(self):
            return self.getToken(P2SpecParser.STRING, 0)

        def getRuleIndex(self):
            return P2SpecParser.RULE_operand

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitOperand" ):
                return visitor.visitOperand(self)
            else:
                return visitor.visitChildren(self)




    def operand(self):

        localctx = P2SpecParser.OperandContext(self, self._ctx, self.state)
        self.enterRule(localctx, 40, self.RULE_operand)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 243
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 266287972352) != 0)):
                self._errHandler.recoverInline(self)
            else:
                self._errHandler.reportMatch(self)
                self.consume()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx





