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
        4,1,41,170,2,0,7,0,2,1,7,1,2,2,7,2,2,3,7,3,2,4,7,4,2,5,7,5,2,6,7,
        6,2,7,7,7,2,8,7,8,2,9,7,9,2,10,7,10,2,11,7,11,2,12,7,12,2,13,7,13,
        2,14,7,14,2,15,7,15,2,16,7,16,1,0,5,0,36,8,0,10,0,12,0,39,9,0,1,
        0,1,0,1,1,1,1,1,1,3,1,46,8,1,1,2,1,2,1,2,1,2,5,2,52,8,2,10,2,12,
        2,55,9,2,1,2,1,2,1,3,1,3,1,3,1,3,1,3,1,4,1,4,1,4,1,4,3,4,68,8,4,
        1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,1,5,5,5,80,8,5,10,5,12,5,83,
        9,5,3,5,85,8,5,1,5,1,5,1,6,1,6,1,6,3,6,92,8,6,1,6,3,6,95,8,6,1,6,
        1,6,1,6,1,6,3,6,101,8,6,1,7,1,7,1,7,3,7,106,8,7,1,7,1,7,1,8,1,8,
        1,8,5,8,113,8,8,10,8,12,8,116,9,8,1,9,1,9,1,9,1,9,1,10,1,10,1,11,
        1,11,1,11,1,11,1,11,1,11,3,11,130,8,11,1,11,1,11,1,11,3,11,135,8,
        11,1,11,1,11,1,12,1,12,1,12,5,12,142,8,12,10,12,12,12,145,9,12,1,
        13,1,13,1,13,5,13,150,8,13,10,13,12,13,153,9,13,1,14,1,14,1,14,1,
        14,1,14,1,14,1,14,3,14,162,8,14,1,15,1,15,1,15,1,15,1,16,1,16,1,
        16,0,0,17,0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,0,3,3,0,
        13,14,31,31,33,35,1,0,24,29,1,0,31,35,170,0,37,1,0,0,0,2,45,1,0,
        0,0,4,47,1,0,0,0,6,58,1,0,0,0,8,63,1,0,0,0,10,69,1,0,0,0,12,88,1,
        0,0,0,14,102,1,0,0,0,16,109,1,0,0,0,18,117,1,0,0,0,20,121,1,0,0,
        0,22,123,1,0,0,0,24,138,1,0,0,0,26,146,1,0,0,0,28,161,1,0,0,0,30,
        163,1,0,0,0,32,167,1,0,0,0,34,36,3,2,1,0,35,34,1,0,0,0,36,39,1,0,
        0,0,37,35,1,0,0,0,37,38,1,0,0,0,38,40,1,0,0,0,39,37,1,0,0,0,40,41,
        5,0,0,1,41,1,1,0,0,0,42,46,3,4,2,0,43,46,3,10,5,0,44,46,3,22,11,
        0,45,42,1,0,0,0,45,43,1,0,0,0,45,44,1,0,0,0,46,3,1,0,0,0,47,48,5,
        1,0,0,48,49,5,31,0,0,49,53,5,15,0,0,50,52,3,6,3,0,51,50,1,0,0,0,
        52,55,1,0,0,0,53,51,1,0,0,0,53,54,1,0,0,0,54,56,1,0,0,0,55,53,1,
        0,0,0,56,57,5,16,0,0,57,5,1,0,0,0,58,59,5,31,0,0,59,60,5,21,0,0,
        60,61,3,8,4,0,61,62,5,22,0,0,62,7,1,0,0,0,63,67,5,31,0,0,64,65,5,
        17,0,0,65,66,5,33,0,0,66,68,5,18,0,0,67,64,1,0,0,0,67,68,1,0,0,0,
        68,9,1,0,0,0,69,70,5,2,0,0,70,71,5,31,0,0,71,72,5,3,0,0,72,73,5,
        31,0,0,73,74,5,30,0,0,74,84,3,12,6,0,75,76,5,4,0,0,76,81,3,14,7,
        0,77,78,5,23,0,0,78,80,3,14,7,0,79,77,1,0,0,0,80,83,1,0,0,0,81,79,
        1,0,0,0,81,82,1,0,0,0,82,85,1,0,0,0,83,81,1,0,0,0,84,75,1,0,0,0,
        84,85,1,0,0,0,85,86,1,0,0,0,86,87,5,22,0,0,87,11,1,0,0,0,88,94,5,
        31,0,0,89,91,5,19,0,0,90,92,3,16,8,0,91,90,1,0,0,0,91,92,1,0,0,0,
        92,93,1,0,0,0,93,95,5,20,0,0,94,89,1,0,0,0,94,95,1,0,0,0,95,100,
        1,0,0,0,96,97,5,17,0,0,97,98,3,12,6,0,98,99,5,18,0,0,99,101,1,0,
        0,0,100,96,1,0,0,0,100,101,1,0,0,0,101,13,1,0,0,0,102,103,5,31,0,
        0,103,105,5,19,0,0,104,106,3,16,8,0,105,104,1,0,0,0,105,106,1,0,
        0,0,106,107,1,0,0,0,107,108,5,20,0,0,108,15,1,0,0,0,109,114,3,18,
        9,0,110,111,5,23,0,0,111,113,3,18,9,0,112,110,1,0,0,0,113,116,1,
        0,0,0,114,112,1,0,0,0,114,115,1,0,0,0,115,17,1,0,0,0,116,114,1,0,
        0,0,117,118,5,31,0,0,118,119,5,30,0,0,119,120,3,20,10,0,120,19,1,
        0,0,0,121,122,7,0,0,0,122,21,1,0,0,0,123,124,5,5,0,0,124,125,5,31,
        0,0,125,126,5,6,0,0,126,129,5,31,0,0,127,128,5,7,0,0,128,130,3,24,
        12,0,129,127,1,0,0,0,129,130,1,0,0,0,130,134,1,0,0,0,131,132,5,8,
        0,0,132,133,5,9,0,0,133,135,5,31,0,0,134,131,1,0,0,0,134,135,1,0,
        0,0,135,136,1,0,0,0,136,137,5,22,0,0,137,23,1,0,0,0,138,143,3,26,
        13,0,139,140,5,11,0,0,140,142,3,26,13,0,141,139,1,0,0,0,142,145,
        1,0,0,0,143,141,1,0,0,0,143,144,1,0,0,0,144,25,1,0,0,0,145,143,1,
        0,0,0,146,151,3,28,14,0,147,148,5,10,0,0,148,150,3,28,14,0,149,147,
        1,0,0,0,150,153,1,0,0,0,151,149,1,0,0,0,151,152,1,0,0,0,152,27,1,
        0,0,0,153,151,1,0,0,0,154,155,5,12,0,0,155,162,3,28,14,0,156,157,
        5,19,0,0,157,158,3,24,12,0,158,159,5,20,0,0,159,162,1,0,0,0,160,
        162,3,30,15,0,161,154,1,0,0,0,161,156,1,0,0,0,161,160,1,0,0,0,162,
        29,1,0,0,0,163,164,3,32,16,0,164,165,7,1,0,0,165,166,3,32,16,0,166,
        31,1,0,0,0,167,168,7,2,0,0,168,33,1,0,0,0,16,37,45,53,67,81,84,91,
        94,100,105,114,129,134,143,151,161
    ]

class P2SpecParser ( Parser ):

    grammarFileName = "P2Spec.g4"

    atn = ATNDeserializer().deserialize(serializedATN())

    decisionsToDFA = [ DFA(ds, i) for i, ds in enumerate(atn.decisionToState) ]

    sharedContextCache = PredictionContextCache()

    literalNames = [ "<INVALID>", "'record'", "'container'", "'of'", "'with'", 
                     "'cursor'", "'on'", "'where'", "'order'", "'by'", "'and'", 
                     "'or'", "'not'", "'true'", "'false'", "'{'", "'}'", 
                     "'['", "']'", "'('", "')'", "':'", "';'", "','", "'=='", 
                     "'!='", "'<='", "'>='", "'<'", "'>'", "'='" ]

    symbolicNames = [ "<INVALID>", "RECORD", "CONTAINER", "OF", "WITH", 
                      "CURSOR", "ON", "WHERE", "ORDER", "BY", "AND", "OR", 
                      "NOT", "TRUE", "FALSE", "LBRACE", "RBRACE", "LBRACK", 
                      "RBRACK", "LPAREN", "RPAREN", "COLON", "SEMI", "COMMA", 
                      "EQ", "NE", "LE", "GE", "LT", "GT", "ASSIGN", "ID", 
                      "PARAM", "INT", "FLOAT", "STRING", "LINE_COMMENT", 
                      "BLOCK_COMMENT", "WS", "UNTERMINATED_STRING", "UNTERMINATED_COMMENT", 
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
    RULE_cursorDecl = 11
    RULE_orExpr = 12
    RULE_andExpr = 13
    RULE_notExpr = 14
    RULE_comparison = 15
    RULE_operand = 16

    ruleNames =  [ "spec", "decl", "recordDecl", "fieldDecl", "fieldType", 
                   "containerDecl", "equation", "layerArgs", "paramList", 
                   "param", "value", "cursorDecl", "orExpr", "andExpr", 
                   "notExpr", "comparison", "operand" ]

    EOF = Token.EOF
    RECORD=1
    CONTAINER=2
    OF=3
    WITH=4
    CURSOR=5
    ON=6
    WHERE=7
    ORDER=8
    BY=9
    AND=10
    OR=11
    NOT=12
    TRUE=13
    FALSE=14
    LBRACE=15
    RBRACE=16
    LBRACK=17
    RBRACK=18
    LPAREN=19
    RPAREN=20
    COLON=21
    SEMI=22
    COMMA=23
    EQ=24
    NE=25
    LE=26
    GE=27
    LT=28
    GT=29
    ASSIGN=30
    ID=31
    PARAM=32
    INT=33
    FLOAT=34
    STRING=35
    LINE_COMMENT=36
    BLOCK_COMMENT=37
    WS=38
    UNTERMINATED_STRING=39
    UNTERMINATED_COMMENT=40
    ERROR_CHAR=41

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
            self.state = 37
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 38) != 0):
                self.state = 34
                self.decl()
                self.state = 39
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 40
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
            self.state = 45
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [1]:
                self.enterOuterAlt(localctx, 1)
                self.state = 42
                self.recordDecl()
                pass
            elif token in [2]:
                self.enterOuterAlt(localctx, 2)
                self.state = 43
                self.containerDecl()
                pass
            elif token in [5]:
                self.enterOuterAlt(localctx, 3)
                self.state = 44
                self.cursorDecl()
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
            self.state = 47
            self.match(P2SpecParser.RECORD)
            self.state = 48
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 49
            self.match(P2SpecParser.LBRACE)
            self.state = 53
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==31:
                self.state = 50
                self.fieldDecl()
                self.state = 55
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 56
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

        def COLON(self):
            return self.getToken(P2SpecParser.COLON, 0)

        def fieldType(self):
            return self.getTypedRuleContext(P2SpecParser.FieldTypeContext,0)


        def SEMI(self):
            return self.getToken(P2SpecParser.SEMI, 0)

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

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
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 58
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 59
            self.match(P2SpecParser.COLON)
            self.state = 60
            self.fieldType()
            self.state = 61
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
            self.length = None # Token

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

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
            self.state = 63
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 67
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==17:
                self.state = 64
                self.match(P2SpecParser.LBRACK)
                self.state = 65
                localctx.length = self.match(P2SpecParser.INT)
                self.state = 66
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
            self.state = 69
            self.match(P2SpecParser.CONTAINER)
            self.state = 70
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 71
            self.match(P2SpecParser.OF)
            self.state = 72
            localctx.recordName = self.match(P2SpecParser.ID)
            self.state = 73
            self.match(P2SpecParser.ASSIGN)
            self.state = 74
            self.equation()
            self.state = 84
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==4:
                self.state = 75
                self.match(P2SpecParser.WITH)
                self.state = 76
                self.layerArgs()
                self.state = 81
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                while _la==23:
                    self.state = 77
                    self.match(P2SpecParser.COMMA)
                    self.state = 78
                    self.layerArgs()
                    self.state = 83
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)



            self.state = 86
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
            self.state = 88
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 94
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==19:
                self.state = 89
                self.match(P2SpecParser.LPAREN)
                self.state = 91
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==31:
                    self.state = 90
                    self.paramList()


                self.state = 93
                self.match(P2SpecParser.RPAREN)


            self.state = 100
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==17:
                self.state = 96
                self.match(P2SpecParser.LBRACK)
                self.state = 97
                self.equation()
                self.state = 98
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
            self.state = 102
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 103
            self.match(P2SpecParser.LPAREN)
            self.state = 105
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==31:
                self.state = 104
                self.paramList()


            self.state = 107
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
            self.state = 109
            self.param()
            self.state = 114
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==23:
                self.state = 110
                self.match(P2SpecParser.COMMA)
                self.state = 111
                self.param()
                self.state = 116
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
            self.state = 117
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 118
            self.match(P2SpecParser.ASSIGN)
            self.state = 119
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

        def ID(self):
            return self.getToken(P2SpecParser.ID, 0)

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
            self.enterOuterAlt(localctx, 1)
            self.state = 121
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 62277050368) != 0)):
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


    class CursorDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.name = None # Token
            self.containerName = None # Token
            self.orderField = None # Token

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
        self.enterRule(localctx, 22, self.RULE_cursorDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 123
            self.match(P2SpecParser.CURSOR)
            self.state = 124
            localctx.name = self.match(P2SpecParser.ID)
            self.state = 125
            self.match(P2SpecParser.ON)
            self.state = 126
            localctx.containerName = self.match(P2SpecParser.ID)
            self.state = 129
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==7:
                self.state = 127
                self.match(P2SpecParser.WHERE)
                self.state = 128
                self.orExpr()


            self.state = 134
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==8:
                self.state = 131
                self.match(P2SpecParser.ORDER)
                self.state = 132
                self.match(P2SpecParser.BY)
                self.state = 133
                localctx.orderField = self.match(P2SpecParser.ID)


            self.state = 136
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
        self.enterRule(localctx, 24, self.RULE_orExpr)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 138
            self.andExpr()
            self.state = 143
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==11:
                self.state = 139
                self.match(P2SpecParser.OR)
                self.state = 140
                self.andExpr()
                self.state = 145
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
        self.enterRule(localctx, 26, self.RULE_andExpr)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 146
            self.notExpr()
            self.state = 151
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==10:
                self.state = 147
                self.match(P2SpecParser.AND)
                self.state = 148
                self.notExpr()
                self.state = 153
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
        self.enterRule(localctx, 28, self.RULE_notExpr)
        try:
            self.state = 161
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [12]:
                self.enterOuterAlt(localctx, 1)
                self.state = 154
                self.match(P2SpecParser.NOT)
                self.state = 155
                self.notExpr()
                pass
            elif token in [19]:
                self.enterOuterAlt(localctx, 2)
                self.state = 156
                self.match(P2SpecParser.LPAREN)
                self.state = 157
                self.orExpr()
                self.state = 158
                self.match(P2SpecParser.RPAREN)
                pass
            elif token in [31, 32, 33, 34, 35]:
                self.enterOuterAlt(localctx, 3)
                self.state = 160
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
        self.enterRule(localctx, 30, self.RULE_comparison)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 163
            localctx.left = self.operand()
            self.state = 164
            localctx.op = self._input.LT(1)
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 1056964608) != 0)):
                localctx.op = self._errHandler.recoverInline(self)
            else:
                self._errHandler.reportMatch(self)
                self.consume()
            self.state = 165
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
        self.enterRule(localctx, 32, self.RULE_operand)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 167
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 66571993088) != 0)):
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





